#include "kiln/runtime/cpu/matmul_decisions.h"

#include "kiln/compiler/codegen/kernel_cache.h"
#include "kiln/core/str_cat.h"

namespace kiln::cpu {

MatmulDecisions& MatmulDecisions::instance() {
  static MatmulDecisions decisions;
  return decisions;
}

std::optional<MatmulPath> MatmulDecisions::find(const std::string& key, const std::string& tag,
                                                const std::string& cache_dir) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = memory_.find(tag + "\n" + key); it != memory_.end()) {
    ++stats_.memory_hits;
    return it->second;
  }
  if (cache_dir.empty()) return std::nullopt;
  codegen::KernelCache disk(cache_dir, tag);
  std::optional<std::string> stored = disk.load(str_cat("matmul-path ", key));
  if (!stored) return std::nullopt;
  MatmulPath path;
  if (*stored == matmul_path_name(MatmulPath::kNative)) path = MatmulPath::kNative;
  else if (*stored == matmul_path_name(MatmulPath::kWidened)) path = MatmulPath::kWidened;
  else return std::nullopt;  // not a choice this Kiln writes: time again
  ++stats_.disk_hits;
  memory_[tag + "\n" + key] = path;
  return path;
}

void MatmulDecisions::record(const std::string& key, const std::string& tag, const std::string& cache_dir,
                             MatmulPath path) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.timed;
  memory_[tag + "\n" + key] = path;
  if (!cache_dir.empty()) codegen::KernelCache(cache_dir, tag).store(str_cat("matmul-path ", key), matmul_path_name(path));
}

MatmulDecisions::Stats MatmulDecisions::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void MatmulDecisions::forget_in_memory() {
  std::lock_guard<std::mutex> lock(mutex_);
  memory_.clear();
}

}  // namespace kiln::cpu
