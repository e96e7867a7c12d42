// CSVLogger and LearningRateScheduler: the two small epoch-level callbacks.
#include "kiln/keras/callbacks/csv_logger.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "kiln/core/check.h"
#include "kiln/keras/models/model.h"

namespace kiln::keras {

CSVLogger::CSVLogger(std::string filename, CSVLoggerOptions options)
    : filename_(std::move(filename)), o_(std::move(options)) {}

void CSVLogger::on_train_begin(const Logs& /*logs*/) {
  file_.reset();
  if (!model()->is_chief()) return;  // one file per cluster: worker 0 writes it
  const bool had_rows = o_.append && std::filesystem::exists(filename_) && std::filesystem::file_size(filename_) > 0;
  file_ = std::make_shared<std::ofstream>(filename_, o_.append ? std::ios::app : std::ios::trunc);
  if (!*file_)
    KILN_THROW(IOError, "[CSVLogger] cannot open ", filename_, " for writing. Hint: check the directory exists.");
  keys_.clear();
  if (had_rows) keys_.push_back("");  // appending: the header is already there
}

void CSVLogger::on_epoch_end(int epoch, const Logs& logs) {
  if (file_ == nullptr) return;
  if (keys_.empty() || (keys_.size() == 1 && keys_[0].empty())) {
    const bool write_header = keys_.empty();
    keys_.clear();
    for (const auto& item : logs) keys_.push_back(item.first);
    std::sort(keys_.begin(), keys_.end());
    if (write_header) {
      *file_ << "epoch";
      for (const std::string& k : keys_) *file_ << o_.separator << k;
      *file_ << "\n";
    }
  }
  *file_ << epoch;
  char buf[32];
  for (const std::string& k : keys_) {
    std::snprintf(buf, sizeof buf, "%.17g", logs.contains(k) ? logs.at(k) : 0.0);
    *file_ << o_.separator << (logs.contains(k) ? buf : "NA");
  }
  *file_ << "\n" << std::flush;
}

void CSVLogger::on_train_end(const Logs& /*logs*/) { file_.reset(); }

void LearningRateScheduler::on_epoch_begin(int epoch, const Logs& /*logs*/) {
  Optimizer* opt = model_->optimizer();
  opt->set_learning_rate(schedule_(epoch, opt->learning_rate()));
}

}  // namespace kiln::keras
