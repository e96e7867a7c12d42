// Checkpoint file naming, listing and pruning over std::filesystem.
#include "kiln/io/checkpoint_directory.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "kiln/core/check.h"
#include "kiln/io/atomic_file.h"

namespace kiln::io {
namespace fs = std::filesystem;
namespace {

void check_prefix(std::string_view prefix) {
  if (prefix.empty() || prefix.find('/') != std::string_view::npos)
    KILN_THROW(ValueError, "[checkpoint_path] prefix='", prefix,
               "' must be a non-empty file name prefix. Hint: use a name such as \"ckpt\".");
}

// The step of "<prefix>-<digits>.kckpt", or nullopt for any other name.
std::optional<int64_t> parse_step(std::string_view name, std::string_view prefix) {
  if (is_atomic_temp_file_name(name)) return std::nullopt;
  if (name.size() <= prefix.size() + 1 + kCheckpointExtension.size()) return std::nullopt;
  if (!name.starts_with(prefix) || name[prefix.size()] != '-' ||
      !name.ends_with(kCheckpointExtension))
    return std::nullopt;
  std::string_view digits = name.substr(prefix.size() + 1);
  digits.remove_suffix(kCheckpointExtension.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  int64_t step = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return step;
}

}  // namespace

std::string checkpoint_path(const std::string& dir, int64_t step, std::string_view prefix) {
  check_prefix(prefix);
  if (step < 0) KILN_THROW(ValueError, "[checkpoint_path] step=", step, " must be >= 0.");
  return (fs::path(dir) / str_cat(prefix, "-", step, kCheckpointExtension)).string();
}

std::vector<CheckpointFile> list_checkpoints(const std::string& dir, std::string_view prefix) {
  check_prefix(prefix);
  std::error_code ec;
  if (!fs::exists(dir, ec)) return {};
  if (!fs::is_directory(dir, ec))
    KILN_THROW(IOError, "[", dir, "] is not a directory. Hint: pass the checkpoint directory.");
  std::vector<CheckpointFile> found;
  fs::directory_iterator it(dir, ec);
  if (ec) KILN_THROW(IOError, "[", dir, "] cannot list directory: ", ec.message(), ".");
  for (const fs::directory_entry& entry : it) {
    if (!entry.is_regular_file(ec)) continue;
    if (auto step = parse_step(entry.path().filename().string(), prefix))
      found.push_back({*step, entry.path().string()});
  }
  std::sort(found.begin(), found.end(), [](const CheckpointFile& a, const CheckpointFile& b) {
    return a.step != b.step ? a.step < b.step : a.path < b.path;
  });
  return found;
}

std::optional<CheckpointFile> latest_checkpoint(const std::string& dir, std::string_view prefix) {
  std::vector<CheckpointFile> all = list_checkpoints(dir, prefix);
  if (all.empty()) return std::nullopt;
  return all.back();
}

std::vector<std::string> prune_checkpoints(const std::string& dir, int max_to_keep,
                                           std::string_view prefix) {
  if (max_to_keep < 1)
    KILN_THROW(ValueError, "[prune_checkpoints] max_to_keep=", max_to_keep,
               " must be >= 1. Hint: keep at least the latest checkpoint.");
  std::vector<CheckpointFile> all = list_checkpoints(dir, prefix);
  std::vector<std::string> removed;
  const size_t keep = static_cast<size_t>(max_to_keep);
  for (size_t i = 0; i + keep < all.size(); ++i) {
    std::error_code ec;
    if (!fs::remove(all[i].path, ec) && ec)
      KILN_THROW(IOError, "[", all[i].path, "] cannot delete old checkpoint: ", ec.message(), ".");
    removed.push_back(all[i].path);
  }
  return removed;
}

}  // namespace kiln::io
