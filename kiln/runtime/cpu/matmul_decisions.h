// MatmulDecisions: which path (oneDNN's 16-bit kernel or f32 compute from 16-bit storage) a
// bf16/f16 matmul shape runs, once timed. Kept per process and, like generated kernels, on
// disk (codegen::KernelCache, tagged with Kiln's and oneDNN's versions, the CPU's 16-bit
// kernel and the thread count), so a shape is timed once per machine, not once per compile.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "kiln/runtime/cpu/onednn_matmul.h"

namespace kiln::cpu {

class MatmulDecisions {
 public:
  struct Stats {
    int64_t timed = 0, memory_hits = 0, disk_hits = 0;
  };

  /// The one table of this process (matmuls are built on several replicas' threads).
  static MatmulDecisions& instance();

  /// The recorded path for `key` (a shape's description) under `tag` (what the timing depends
  /// on), from memory or else from `cache_dir` (empty: memory only).
  std::optional<MatmulPath> find(const std::string& key, const std::string& tag, const std::string& cache_dir);
  /// Records a timed choice in memory and, with a `cache_dir`, on disk.
  void record(const std::string& key, const std::string& tag, const std::string& cache_dir, MatmulPath path);
  Stats stats() const;
  /// Forgets the in-memory table (tests: the next find reads the disk).
  void forget_in_memory();

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, MatmulPath> memory_;  // by tag + key
  Stats stats_;
};

}  // namespace kiln::cpu
