// BackupAndRestore over CheckpointManager ("backup-<step>.kckpt" in the backup directory).
#include "kiln/keras/callbacks/backup_and_restore.h"

#include <filesystem>

#include "kiln/core/check.h"
#include "kiln/core/logging.h"
#include "kiln/keras/models/model.h"
#include "kiln/keras/saving/checkpoint.h"

namespace kiln::keras {

BackupAndRestore::BackupAndRestore(std::string backup_dir, BackupAndRestoreOptions options)
    : dir_(std::move(backup_dir)), options_(options) {
  if (dir_.empty()) KILN_THROW(ValueError, "[BackupAndRestore] backup_dir is empty. Hint: name a directory.");
}

BackupAndRestore::~BackupAndRestore() = default;
BackupAndRestore::BackupAndRestore(BackupAndRestore&&) noexcept = default;
BackupAndRestore& BackupAndRestore::operator=(BackupAndRestore&&) noexcept = default;

void BackupAndRestore::on_train_begin(const Logs& /*logs*/) {
  manager_ = std::make_unique<CheckpointManager>(Checkpoint(*model()), dir_,
                                                 CheckpointManagerOptions{.max_to_keep = options_.max_to_keep,
                                                                          .prefix = "backup"});
  batches_since_backup_ = 0;
  restored_ = false;
  if (std::optional<TrainingState> state = manager_->restore()) {
    log(LogLevel::kInfo, str_cat("[BackupAndRestore] resuming from ", dir_, " at epoch ", state->epoch + 1,
                                 ", step ", state->step_in_epoch));
    model()->resume_training_from(std::move(*state));
    restored_ = true;
  }
}

void BackupAndRestore::backup(TrainingState state) {
  // Named by the optimizer's step, so later backups sort after earlier ones across epochs.
  // Every worker restores from the same directory; only worker 0 writes it.
  if (model()->is_chief()) manager_->save(state);
}

void BackupAndRestore::on_train_batch_end(int64_t /*batch*/, const Logs& /*logs*/) {
  if (options_.save_freq.per_epoch() || ++batches_since_backup_ < options_.save_freq.batches) return;
  batches_since_backup_ = 0;
  backup(model()->training_state());
}

void BackupAndRestore::on_epoch_end(int epoch, const Logs& /*logs*/) {
  TrainingState state = model()->training_state();
  state.epoch = epoch + 1;  // the next epoch starts from its first step
  state.step_in_epoch = 0;
  if (options_.save_freq.per_epoch()) backup(std::move(state));
}

void BackupAndRestore::on_train_end(const Logs& /*logs*/) {
  if (!options_.delete_checkpoint || !model()->is_chief()) return;
  for (const std::string& path : manager_->checkpoints()) std::filesystem::remove(path);
  std::error_code ec;
  std::filesystem::remove(dir_, ec);  // only when empty
}

}  // namespace kiln::keras
