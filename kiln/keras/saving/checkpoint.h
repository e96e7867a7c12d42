// Checkpoint and CheckpointManager (tf.train.Checkpoint / CheckpointManager, S14, S26): the
// whole training state in one io checkpoint file (atomic: temp file, fsync, rename; CRC-32C),
// numbered in a directory, pruned to the newest N, restored from the newest that loads.
// Tensors are named by variable, never by device or replica, so a checkpoint written under
// one strategy or replica count restores under another.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/keras/models/model.h"
#include "kiln/keras/trainer/training_state.h"

namespace kiln::keras {

/// The state to continue training exactly: the model's weights, the optimizer's iterations,
/// learning rate and slots (once created), every layer's RNG state (Layer::random_state),
/// and a TrainingState.
class Checkpoint {
 public:
  /// Saves and restores `model` (and its optimizer, once compiled); the model must outlive it.
  explicit Checkpoint(Model& model) : model_(&model) {}

  /// Writes everything to `path` atomically with a checksum: a crash mid-write leaves any
  /// previous file at `path` intact.
  void write(const std::string& path, const TrainingState& state = {}) const;
  /// Restores the variables from `path` and returns its TrainingState. The model must be
  /// built (and compiled, for the optimizer state). IOError naming the file and the problem
  /// for a damaged file or one from another architecture; nothing is assigned then.
  TrainingState read(const std::string& path) const;

  Model& model() const { return *model_; }

 private:
  Model* model_;
};

struct CheckpointManagerOptions {
  int max_to_keep = 5;          // older checkpoints are deleted after each save
  std::string prefix = "ckpt";  // files are <prefix>-<step>.kckpt
};

/// Numbered checkpoints of one Checkpoint in a directory.
class CheckpointManager {
 public:
  /// ValueError if max_to_keep < 1. The directory is created on the first save.
  CheckpointManager(Checkpoint checkpoint, std::string directory, CheckpointManagerOptions options = {});

  /// Writes <directory>/<prefix>-<step>.kckpt, `step` defaulting to the optimizer's
  /// iterations (0 before compile), then deletes all but the newest max_to_keep. Returns the
  /// path written.
  std::string save(const TrainingState& state = {}, std::optional<int64_t> step = std::nullopt);
  /// The newest checkpoint's path, or nullopt.
  std::optional<std::string> latest_checkpoint() const;
  /// Every checkpoint's path, oldest first.
  std::vector<std::string> checkpoints() const;
  /// Restores the newest checkpoint that loads and returns its state; a damaged newest file
  /// (say, corrupted on disk later) is skipped with a warning naming it. nullopt when the
  /// directory holds none; IOError when none loads.
  std::optional<TrainingState> restore();

  const std::string& directory() const { return directory_; }

 private:
  Checkpoint checkpoint_;
  std::string directory_;
  CheckpointManagerOptions options_;
};

}  // namespace kiln::keras
