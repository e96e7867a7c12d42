// EarlyStopping: Keras's rule, improvement = current - min_delta beats best (in the mode's
// direction); stop after `patience` epochs without one.
#include "kiln/keras/callbacks/early_stopping.h"

#include <cmath>

#include "kiln/core/check.h"
#include "kiln/core/logging.h"
#include "kiln/core/str_cat.h"
#include "kiln/keras/models/model.h"

namespace kiln::keras {

EarlyStopping::EarlyStopping(EarlyStoppingOptions options)
    : o_(std::move(options)), monitor_(o_.monitor, o_.mode, o_.min_delta, "EarlyStopping") {}

void EarlyStopping::on_train_begin(const Logs& /*logs*/) {
  wait_ = stopped_epoch_ = best_epoch_ = 0;
  best_ = monitor_.worst();
  best_weights_.clear();
}

void EarlyStopping::on_epoch_end(int epoch, const Logs& logs) {
  if (epoch < o_.start_from_epoch) return;
  const double current = logs.at(o_.monitor);
  if (o_.restore_best_weights && best_weights_.empty()) best_weights_ = model_->get_weights();
  ++wait_;
  if (monitor_.improved(current, best_)) {
    best_ = current;
    best_epoch_ = epoch;
    if (o_.restore_best_weights) best_weights_ = model_->get_weights();
    if (!o_.baseline || monitor_.improved(current, *o_.baseline)) wait_ = 0;
    return;
  }
  if (wait_ >= o_.patience && epoch > 0) {
    stopped_epoch_ = epoch;
    model_->stop_training = true;
    if (o_.restore_best_weights && !best_weights_.empty()) model_->set_weights(best_weights_);
  }
}

void EarlyStopping::on_train_end(const Logs& /*logs*/) {
  if (stopped_epoch_ > 0 && params_.verbose > 0)
    log(LogLevel::kInfo, str_cat("Epoch ", stopped_epoch_ + 1, ": early stopping (best ", o_.monitor, " ",
                                 best_, " at epoch ", best_epoch_ + 1, ")"));
}

void TerminateOnNaN::on_train_batch_end(int64_t batch, const Logs& logs) {
  if (!logs.contains("loss") || std::isfinite(logs.at("loss"))) return;
  log(LogLevel::kWarning, str_cat("Batch ", batch, ": invalid loss ", logs.at("loss"), ", terminating training"));
  model_->stop_training = true;
}

}  // namespace kiln::keras
