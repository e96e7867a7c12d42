// ReduceLROnPlateau: Keras 2's on_epoch_end, step for step (cooldown first, then improvement,
// then patience).
#include "kiln/keras/callbacks/reduce_lr_on_plateau.h"

#include <algorithm>
#include <cstdio>

#include "kiln/core/check.h"
#include "kiln/keras/models/model.h"

namespace kiln::keras {

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options)
    : o_(std::move(options)), monitor_(o_.monitor, o_.mode, o_.min_delta, "ReduceLROnPlateau") {
  if (!(o_.factor < 1.0))
    KILN_THROW(ValueError, "[ReduceLROnPlateau] factor must be below 1.0, received ", o_.factor, ".");
}

void ReduceLROnPlateau::on_train_begin(const Logs& /*logs*/) {
  best_ = monitor_.worst();
  wait_ = cooldown_counter_ = 0;
}

void ReduceLROnPlateau::on_epoch_end(int epoch, const Logs& logs) {
  const double current = logs.at(o_.monitor);
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    wait_ = 0;
  }
  if (monitor_.improved(current, best_)) {
    best_ = current;
    wait_ = 0;
    return;
  }
  // Keras asks "in cooldown?" again after the decrement: the last cooldown epoch counts.
  if (cooldown_counter_ > 0 || ++wait_ < o_.patience) return;
  Optimizer* optimizer = model_->optimizer();
  const double old_lr = optimizer->learning_rate();
  if (old_lr > o_.min_lr) {
    const double new_lr = std::max(old_lr * o_.factor, o_.min_lr);
    optimizer->set_learning_rate(new_lr);
    if (o_.verbose > 0)
      std::printf("\nEpoch %d: ReduceLROnPlateau reducing learning rate to %g.\n", epoch + 1, new_lr);
    cooldown_counter_ = o_.cooldown;
    wait_ = 0;
  }
}

}  // namespace kiln::keras
