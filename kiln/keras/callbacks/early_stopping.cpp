// EarlyStopping: Keras's rule, improvement = current - min_delta beats best (in the mode's
// direction); stop after `patience` epochs without one.
#include "kiln/keras/callbacks/early_stopping.h"

#include <cmath>
#include <limits>

#include "kiln/core/check.h"
#include "kiln/core/logging.h"
#include "kiln/core/str_cat.h"
#include "kiln/keras/models/model.h"

namespace kiln::keras {

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : o_(std::move(options)) {
  if (o_.mode == "max") maximize_ = true;
  else if (o_.mode == "auto")
    maximize_ = o_.monitor.find("acc") != std::string::npos || o_.monitor.find("auc") != std::string::npos;
  else if (o_.mode != "min")
    KILN_THROW(ConfigError, "[EarlyStopping] unknown mode '", o_.mode, "'. Hint: use min, max or auto.");
  o_.min_delta = std::fabs(o_.min_delta);
}

bool EarlyStopping::improved(double current, double reference) const {
  return maximize_ ? current - o_.min_delta > reference : current + o_.min_delta < reference;
}

void EarlyStopping::on_train_begin(const Logs& /*logs*/) {
  wait_ = stopped_epoch_ = best_epoch_ = 0;
  best_ = maximize_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  best_weights_.clear();
}

void EarlyStopping::on_epoch_end(int epoch, const Logs& logs) {
  if (epoch < o_.start_from_epoch) return;
  const double current = logs.at(o_.monitor);
  if (o_.restore_best_weights && best_weights_.empty()) best_weights_ = model_->get_weights();
  ++wait_;
  if (improved(current, best_)) {
    best_ = current;
    best_epoch_ = epoch;
    if (o_.restore_best_weights) best_weights_ = model_->get_weights();
    if (!o_.baseline || improved(current, *o_.baseline)) wait_ = 0;
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

}  // namespace kiln::keras
