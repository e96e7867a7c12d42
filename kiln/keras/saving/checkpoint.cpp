// Checkpoint contents: tensors "model/<weight>", "optimizer/<variable>", "rng/<variable>",
// "metrics/<variable>" (the epoch's running metric accumulators);
// metadata "format", "model_config" (for messages), "epoch", "step_in_epoch", "iterator".
#include "kiln/keras/saving/checkpoint.h"

#include <charconv>
#include <filesystem>

#include "kiln/core/check.h"
#include "kiln/core/logging.h"
#include "kiln/io/atomic_file.h"
#include "kiln/io/checkpoint.h"
#include "kiln/io/checkpoint_directory.h"
#include "kiln/keras/saving/saving_impl.h"

namespace kiln::keras {
namespace {

constexpr const char* kFormat = "kiln.training_checkpoint";

std::vector<Variable> random_state(const Model& model) {
  std::vector<Variable> out;
  for (const LayerHandle& l : model.layers())
    for (const Variable& v : l->random_state()) out.push_back(v);
  return out;
}

void add_tensors(const std::string& prefix, const std::vector<Variable>& vars, io::CheckpointContents* c) {
  for (const Variable& v : vars) c->tensors.push_back({prefix + v.name(), v.host_value().clone()});
}

// Looks up every variable under `prefix` (missing ones named), for assign_checked.
void collect(const io::CheckpointContents& c, const std::string& prefix, const std::vector<Variable>& vars,
             const std::string& path, std::vector<Variable>* out_vars, std::vector<HostTensor>* values,
             std::vector<std::string>* where) {
  for (const Variable& v : vars) {
    const HostTensor* t = io::find_tensor(c.tensors, prefix + v.name());
    if (t == nullptr)
      KILN_THROW(IOError, "[", path, "] has no tensor '", prefix, v.name(),
                 "'. Hint: restore into the architecture and optimizer that were saved.");
    out_vars->push_back(v);
    values->push_back(*t);
    where->push_back("tensor '" + prefix + v.name() + "'");
  }
}

size_t count_prefixed(const io::CheckpointContents& c, const std::string& prefix) {
  size_t n = 0;
  for (const io::NamedTensor& t : c.tensors) n += t.name.starts_with(prefix);
  return n;
}

int64_t metadata_int(const io::CheckpointContents& c, const std::string& key, const std::string& path) {
  auto it = c.metadata.find(key);
  int64_t v = 0;
  if (it == c.metadata.end() ||
      std::from_chars(it->second.data(), it->second.data() + it->second.size(), v).ec != std::errc())
    KILN_THROW(IOError, "[", path, "] has no valid '", key, "' entry. Hint: pass a checkpoint Checkpoint::write made.");
  return v;
}

}  // namespace

void Checkpoint::write(const std::string& path, const TrainingState& state) const {
  io::CheckpointContents c;
  c.metadata["format"] = kFormat;
  c.metadata["model_config"] = model_->to_json();
  c.metadata["epoch"] = std::to_string(state.epoch);
  c.metadata["step_in_epoch"] = std::to_string(state.step_in_epoch);
  c.metadata["iterator"] = std::string(state.iterator_state.begin(), state.iterator_state.end());
  add_tensors("model/", model_->weights(), &c);
  if (model_->is_compiled() && model_->optimizer()->slots_created())
    add_tensors("optimizer/", model_->optimizer()->variables(), &c);
  add_tensors("rng/", random_state(*model_), &c);
  add_tensors("metrics/", model_->metric_variables(), &c);
  io::write_checkpoint(path, c);
}

TrainingState Checkpoint::read(const std::string& path) const {
  io::CheckpointContents c = io::read_checkpoint(path);
  auto format = c.metadata.find("format");
  if (format == c.metadata.end() || format->second != kFormat)
    KILN_THROW(IOError, "[", path, "] is a Kiln checkpoint container but not a training checkpoint (format '",
               format == c.metadata.end() ? "" : format->second, "').");
  std::vector<Variable> vars;
  std::vector<HostTensor> values;
  std::vector<std::string> where;
  const std::vector<Variable> weights = model_->weights();
  if (count_prefixed(c, "model/") != weights.size())
    KILN_THROW(IOError, "[", path, "] holds ", count_prefixed(c, "model/"), " model weights, but model '",
               model_->name(), "' has ", weights.size(),
               ". Hint: build the model (declare input_shape) with the architecture that was saved.");
  collect(c, "model/", weights, path, &vars, &values, &where);
  if (model_->is_compiled() && count_prefixed(c, "optimizer/") > 0) {
    model_->optimizer()->create_slots(model_->trainable_weights());
    const std::vector<Variable> opt = model_->optimizer()->variables();
    if (count_prefixed(c, "optimizer/") != opt.size())
      KILN_THROW(IOError, "[", path, "] holds ", count_prefixed(c, "optimizer/"), " optimizer variables, but the ",
                 model_->optimizer()->class_name(), " optimizer of model '", model_->name(), "' has ", opt.size(),
                 ". Hint: compile with the optimizer that was saved.");
    collect(c, "optimizer/", opt, path, &vars, &values, &where);
  }
  collect(c, "rng/", random_state(*model_), path, &vars, &values, &where);
  // Metric accumulators are restored by name where the checkpoint has them: a model compiled
  // with other metrics (or a checkpoint from before metrics were saved) still loads, and the
  // accumulators it lacks start empty.
  for (const Variable& m : model_->metric_variables()) {
    if (const HostTensor* t = io::find_tensor(c.tensors, "metrics/" + m.name())) {
      vars.push_back(m);
      values.push_back(*t);
      where.push_back("tensor 'metrics/" + m.name() + "'");
    }
  }
  TrainingState state;
  state.epoch = static_cast<int>(metadata_int(c, "epoch", path));
  state.step_in_epoch = metadata_int(c, "step_in_epoch", path);
  auto it = c.metadata.find("iterator");
  if (it != c.metadata.end()) state.iterator_state.assign(it->second.begin(), it->second.end());
  internal::assign_checked(vars, values, path, where);
  return state;
}

CheckpointManager::CheckpointManager(Checkpoint checkpoint, std::string directory, CheckpointManagerOptions options)
    : checkpoint_(checkpoint), directory_(std::move(directory)), options_(std::move(options)) {
  if (options_.max_to_keep < 1)
    KILN_THROW(ValueError, "[CheckpointManager] max_to_keep=", options_.max_to_keep,
               " must be >= 1. Hint: keep at least the latest checkpoint.");
}

std::string CheckpointManager::save(const TrainingState& state, std::optional<int64_t> step) {
  const Model& model = checkpoint_.model();
  const int64_t n = step ? *step
                         : model.is_compiled() ? model.optimizer()->iterations().host_value().to_vector<int64_t>()[0]
                                               : 0;
  std::error_code ec;
  std::filesystem::create_directories(directory_, ec);
  // Each step writes a new name, so the writer's own cleaning would never meet the temporary
  // file of a killed save of another step.
  io::remove_stale_temp_files(directory_, options_.prefix + "-");
  const std::string path = io::checkpoint_path(directory_, n, options_.prefix);
  checkpoint_.write(path, state);
  io::prune_checkpoints(directory_, options_.max_to_keep, options_.prefix);
  return path;
}

std::optional<std::string> CheckpointManager::latest_checkpoint() const {
  std::optional<io::CheckpointFile> latest = io::latest_checkpoint(directory_, options_.prefix);
  if (!latest) return std::nullopt;
  return latest->path;
}

std::vector<std::string> CheckpointManager::checkpoints() const {
  std::vector<std::string> out;
  for (const io::CheckpointFile& f : io::list_checkpoints(directory_, options_.prefix)) out.push_back(f.path);
  return out;
}

std::optional<TrainingState> CheckpointManager::restore() {
  std::vector<io::CheckpointFile> files = io::list_checkpoints(directory_, options_.prefix);
  if (files.empty()) return std::nullopt;
  std::string errors;
  for (auto f = files.rbegin(); f != files.rend(); ++f) {
    try {
      return checkpoint_.read(f->path);
    } catch (const IOError& e) {
      log(LogLevel::kWarning, str_cat("[CheckpointManager] skipping damaged checkpoint: ", e.what()));
      errors += str_cat(errors.empty() ? "" : "; ", e.what());
    }
  }
  KILN_THROW(IOError, "[", directory_, "] no checkpoint loads: ", errors);
}

}  // namespace kiln::keras
