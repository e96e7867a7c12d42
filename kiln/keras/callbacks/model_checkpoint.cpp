// ModelCheckpoint and its path template formatter.
#include "kiln/keras/callbacks/model_checkpoint.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "kiln/core/check.h"
#include "kiln/core/logging.h"
#include "kiln/keras/models/model.h"

namespace kiln::keras {

SaveFrequency::SaveFrequency(const char* epoch) {
  if (std::string(epoch) != "epoch")
    KILN_THROW(ValueError, "[save_freq] expected \"epoch\" or a number of batches, received \"", epoch, "\".");
}

SaveFrequency::SaveFrequency(int64_t n) : batches(n) {
  if (n < 1) KILN_THROW(ValueError, "[save_freq] expected a number of batches >= 1, received ", n, ".");
}

namespace {

// One {field:spec} with a Python format spec of the forms Keras templates use.
std::string format_field(const std::string& name, const std::string& spec, double value) {
  std::string flags = spec.empty() ? "g" : spec;
  const char type = flags.back();
  if (std::string("dfeg").find(type) == std::string::npos)
    flags += 'g';
  for (char c : flags.substr(0, flags.size() - 1))
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.'))
      KILN_THROW(ValueError, "[ModelCheckpoint] unsupported format spec '", spec, "' for {", name,
                 "}. Hint: use forms like {epoch:02d} or {val_loss:.4f}.");
  char buf[128];
  std::string f(1, '%');
  if (flags.back() == 'd') {
    f.append(flags, 0, flags.size() - 1).append("lld");
    std::snprintf(buf, sizeof buf, f.c_str(), static_cast<long long>(std::llround(value)));
  } else {
    f += flags;
    std::snprintf(buf, sizeof buf, f.c_str(), value);
  }
  return buf;
}

}  // namespace

std::string format_checkpoint_path(const std::string& pattern, int epoch, std::optional<int64_t> batch,
                                   const Logs& logs) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if ((c == '{' || c == '}') && i + 1 < pattern.size() && pattern[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    const size_t close = pattern.find('}', i);
    if (close == std::string::npos)
      KILN_THROW(ValueError, "[ModelCheckpoint] unclosed '{' in filepath '", pattern, "'.");
    const std::string field = pattern.substr(i + 1, close - i - 1);
    const size_t colon = field.find(':');
    const std::string name = field.substr(0, colon);
    const std::string spec = colon == std::string::npos ? "" : field.substr(colon + 1);
    double value = 0;
    if (name == "epoch") value = epoch + 1;
    else if (name == "batch" && batch) value = static_cast<double>(*batch + 1);
    else if (logs.contains(name)) value = logs.at(name);
    else {
      std::string names = "epoch";
      if (batch) names += ", batch";
      for (const auto& [key, v] : logs) names += ", " + key;
      KILN_THROW(ValueError, "[ModelCheckpoint] filepath '", pattern, "' names {", name,
                 "}, which is not available here; the fields are: ", names, ".");
    }
    out += spec.empty() && (name == "epoch" || name == "batch") ? format_field(name, "d", value)
                                                              : format_field(name, spec, value);
    i = close;
  }
  return out;
}

ModelCheckpoint::ModelCheckpoint(std::string filepath, ModelCheckpointOptions options)
    : filepath_(std::move(filepath)), options_(std::move(options)) {
  const std::string& mode = options_.mode;
  if (mode != "auto" && mode != "min" && mode != "max")
    KILN_THROW(ValueError, "[ModelCheckpoint] expected mode auto, min or max, received mode='", mode, "'.");
  // Keras's auto rule: accuracies and f-measures grow, everything else shrinks.
  maximize_ = mode == "max" || (mode == "auto" && (options_.monitor.find("acc") != std::string::npos ||
                                                   options_.monitor.starts_with("fmeasure")));
}

void ModelCheckpoint::on_train_begin(const Logs& /*logs*/) {
  const double inf = std::numeric_limits<double>::infinity();
  best_ = options_.initial_value_threshold.value_or(maximize_ ? -inf : inf);
  batches_since_save_ = 0;
}

void ModelCheckpoint::on_epoch_begin(int epoch, const Logs& /*logs*/) { epoch_ = epoch; }

void ModelCheckpoint::on_train_batch_end(int64_t batch, const Logs& logs) {
  if (options_.save_freq.per_epoch() || ++batches_since_save_ < options_.save_freq.batches) return;
  batches_since_save_ = 0;
  save(epoch_, batch, logs);
}

void ModelCheckpoint::on_epoch_end(int epoch, const Logs& logs) {
  if (options_.save_freq.per_epoch()) save(epoch, std::nullopt, logs);
}

void ModelCheckpoint::save(int epoch, std::optional<int64_t> batch, const Logs& logs) {
  const std::string path = format_checkpoint_path(filepath_, epoch, batch, logs);
  // Every worker tracks the best value (they see the same averaged logs); only worker 0
  // reports and writes, as only it prints progress.
  const bool chief = model()->is_chief();
  const bool verbose = options_.verbose > 0 && chief;
  if (options_.save_best_only) {
    if (!logs.contains(options_.monitor)) {
      log(LogLevel::kWarning, str_cat("[ModelCheckpoint] can save the best model only with ", options_.monitor,
                                      " available; skipping. Hint: pass validation_data or monitor another key."));
      return;
    }
    const double current = logs.at(options_.monitor);
    const bool improved = maximize_ ? current > best_ : current < best_;
    if (!improved) {
      if (verbose)
        std::printf("\nEpoch %d: %s did not improve from %.5f\n", epoch + 1, options_.monitor.c_str(), best_);
      return;
    }
    if (verbose)
      std::printf("\nEpoch %d: %s improved from %.5f to %.5f, saving model to %s\n", epoch + 1,
                  options_.monitor.c_str(), best_, current, path.c_str());
    best_ = current;
  } else if (verbose) {
    std::printf("\nEpoch %d: saving model to %s\n", epoch + 1, path.c_str());
  }
  if (!chief) return;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (options_.save_weights_only) model()->save_weights(path);
  else model()->save(path);
  last_saved_ = path;
}

}  // namespace kiln::keras
