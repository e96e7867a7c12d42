// ReduceLROnPlateau: multiplies the learning rate by `factor` when a monitored value has not
// improved for `patience` epochs (keras.callbacks.ReduceLROnPlateau, its defaults).
#pragma once

#include <string>

#include "kiln/keras/callbacks/callback.h"
#include "kiln/keras/callbacks/monitor.h"

namespace kiln::keras {

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;  // new_lr = max(lr * factor, min_lr); must be < 1
  int patience = 10;    // epochs without improvement before a reduction
  int verbose = 0;      // 1: a line per reduction
  std::string mode = "auto";  // "min", "max", or "auto" (max for accuracy-like names)
  double min_delta = 1e-4;    // smaller changes do not count as improvement
  int cooldown = 0;           // epochs after a reduction before counting again
  double min_lr = 0.0;
};

/// Needs an optimizer with a constant learning rate (a LearningRateSchedule cannot be set:
/// ValueError at the first reduction, as Keras fails there too).
class ReduceLROnPlateau : public Callback {
 public:
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  double best() const { return best_; }

 private:
  ReduceLROnPlateauOptions o_;
  Monitor monitor_;
  double best_ = 0;
  int wait_ = 0, cooldown_counter_ = 0;
};

}  // namespace kiln::keras
