// Numbered checkpoint files in a directory ("ckpt-42.kckpt"): naming, listing by step and
// pruning to the newest N. The Keras-level CheckpointManager builds on these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::io {

/// File extension of Kiln checkpoints.
inline constexpr std::string_view kCheckpointExtension = ".kckpt";

/// One checkpoint file found in a directory.
struct CheckpointFile {
  int64_t step = 0;
  std::string path;
};

/// "<dir>/<prefix>-<step>.kckpt". Throws ValueError for a negative step or a prefix that is
/// empty or contains '/'.
std::string checkpoint_path(const std::string& dir, int64_t step, std::string_view prefix = "ckpt");

/// The checkpoints `<prefix>-<step>.kckpt` in `dir`, oldest step first. Temporary files of
/// interrupted writes and other names are skipped. A missing directory gives an empty list;
/// a path that is not a directory is an IOError.
std::vector<CheckpointFile> list_checkpoints(const std::string& dir,
                                             std::string_view prefix = "ckpt");

/// The checkpoint with the highest step, or nullopt if there is none.
std::optional<CheckpointFile> latest_checkpoint(const std::string& dir,
                                                std::string_view prefix = "ckpt");

/// Deletes all but the `max_to_keep` newest checkpoints and returns the deleted paths, oldest
/// first. Throws ValueError if max_to_keep < 1, IOError if a file cannot be deleted.
std::vector<std::string> prune_checkpoints(const std::string& dir, int max_to_keep,
                                           std::string_view prefix = "ckpt");

}  // namespace kiln::io
