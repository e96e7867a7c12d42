// EarlyStopping: stops fit when a monitored value stops improving (keras.callbacks.EarlyStopping);
// TerminateOnNaN: stops it at the first non-finite loss.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/keras/callbacks/callback.h"
#include "kiln/keras/callbacks/monitor.h"

namespace kiln::keras {

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0.0;   // smaller changes do not count as improvement
  int patience = 0;         // epochs without improvement before stopping
  std::string mode = "auto";  // "min", "max", or "auto" (max for accuracy-like names)
  std::optional<double> baseline = std::nullopt;
  bool restore_best_weights = false;
  int start_from_epoch = 0;
};

class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options = {});
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  /// The epoch (0-based) at which training stopped, or 0 if it ran to the end.
  int stopped_epoch() const { return stopped_epoch_; }
  int best_epoch() const { return best_epoch_; }
  double best() const { return best_; }

 private:
  EarlyStoppingOptions o_;
  Monitor monitor_;
  int wait_ = 0, stopped_epoch_ = 0, best_epoch_ = 0;
  double best_ = 0;
  std::vector<HostTensor> best_weights_;
};

/// keras.callbacks.TerminateOnNaN: ends fit after the first batch whose loss is NaN or infinite.
class TerminateOnNaN : public Callback {
 public:
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
};

}  // namespace kiln::keras
