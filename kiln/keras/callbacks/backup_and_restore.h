// BackupAndRestore (keras.callbacks.BackupAndRestore, S27): backs up the whole training
// state (Checkpoint: variables, RNG state, epoch, step and input position) every epoch or
// every N batches; when fit starts and a backup exists, it restores it and fit resumes at
// that step, so a killed run rerun with the same command ends with the weights an
// uninterrupted run would have.
#pragma once

#include <memory>
#include <string>

#include "kiln/keras/callbacks/callback.h"
#include "kiln/keras/callbacks/model_checkpoint.h"
#include "kiln/keras/trainer/training_state.h"

namespace kiln::keras {

class CheckpointManager;

struct BackupAndRestoreOptions {
  SaveFrequency save_freq = "epoch";
  /// Delete the backups when training ends (Keras's default): a rerun then starts afresh.
  bool delete_checkpoint = true;
  /// Backups kept: the newest, plus older ones in case the newest is damaged later.
  int max_to_keep = 2;
};

/// Args: backup_dir (created when needed; one per training job).
class BackupAndRestore : public Callback {
 public:
  explicit BackupAndRestore(std::string backup_dir, BackupAndRestoreOptions options = {});
  ~BackupAndRestore() override;
  BackupAndRestore(BackupAndRestore&&) noexcept;
  BackupAndRestore& operator=(BackupAndRestore&&) noexcept;
  void on_train_begin(const Logs& logs) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

  /// True when the last fit started from a backup.
  bool restored() const { return restored_; }

 private:
  void backup(TrainingState state);

  std::string dir_;
  BackupAndRestoreOptions options_;
  std::unique_ptr<CheckpointManager> manager_;
  int64_t batches_since_backup_ = 0;
  bool restored_ = false;
};

}  // namespace kiln::keras
