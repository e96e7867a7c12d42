// ModelCheckpoint (keras.callbacks.ModelCheckpoint, S27): saves the model or its weights
// every epoch or every N batches to a path templated with the epoch and the logs
// ("ckpt/epoch_{epoch:02d}-{val_loss:.4f}.h5"), optionally only when the monitored value
// improves.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "kiln/keras/callbacks/callback.h"

namespace kiln::keras {

/// Keras save_freq: "epoch" or a number of batches: `.save_freq = "epoch"`, `.save_freq = 100`.
struct SaveFrequency {
  SaveFrequency(const char* epoch);  // NOLINT: implicit on purpose; only "epoch"
  SaveFrequency(int64_t n);          // NOLINT: implicit on purpose; >= 1
  SaveFrequency(int n) : SaveFrequency(static_cast<int64_t>(n)) {}  // NOLINT
  bool per_epoch() const { return batches == 0; }
  int64_t batches = 0;  // 0 = every epoch
};

/// Fills a Keras/Python format template: {name} or {name:spec} with spec [0][width][.prec](d|f|e|g),
/// "{{" and "}}" for braces. `epoch` and `batch` are the 1-based values Keras uses; other
/// names come from `logs`. ValueError naming an unknown field and the available ones.
std::string format_checkpoint_path(const std::string& pattern, int epoch, std::optional<int64_t> batch,
                                   const Logs& logs);

struct ModelCheckpointOptions {
  std::string monitor = "val_loss";
  int verbose = 0;
  bool save_best_only = false;
  bool save_weights_only = false;
  std::string mode = "auto";  // "min", "max", or "auto" (max when monitor names an accuracy)
  SaveFrequency save_freq = "epoch";
  /// With save_best_only: the value to beat at first (none: the first value saves).
  std::optional<double> initial_value_threshold = std::nullopt;
};

/// Args: filepath (its extension picks the format, as Model::save/save_weights do).
class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(std::string filepath, ModelCheckpointOptions options = {});
  void on_train_begin(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;

  /// The best monitored value so far (save_best_only).
  double best() const { return best_; }
  /// The path of the last save, empty before the first.
  const std::string& last_saved() const { return last_saved_; }

 private:
  void save(int epoch, std::optional<int64_t> batch, const Logs& logs);

  std::string filepath_;
  ModelCheckpointOptions options_;
  bool maximize_ = false;
  double best_ = std::numeric_limits<double>::infinity();
  int epoch_ = 0;
  int64_t batches_since_save_ = 0;
  std::string last_saved_;
};

}  // namespace kiln::keras
