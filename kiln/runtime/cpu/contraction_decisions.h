// ContractionDecisions: which path (oneDNN's 16-bit kernel or f32 compute from 16-bit storage) a
// bf16/f16 matmul or convolution shape runs, once timed. Kept per process and, like generated
// kernels, on disk (codegen::KernelCache, tagged with oneDNN's version, both paths'
// implementations and the thread count), so a shape is timed once per machine, not once per
// compile. choose_16bit_path is the one place that times and logs.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "kiln/runtime/cpu/onednn_matmul.h"

namespace kiln::cpu {

class ContractionDecisions {
 public:
  struct Stats {
    int64_t timed = 0, memory_hits = 0, disk_hits = 0;
  };

  /// The one table of this process (matmuls are built on several replicas' threads).
  static ContractionDecisions& instance();

  /// The recorded path for `key` (a shape's description) under `tag` (what the timing depends
  /// on), from memory or else from `cache_dir` (empty: memory only).
  std::optional<MatmulPath> find(const std::string& key, const std::string& tag, const std::string& cache_dir);
  /// Records a timed choice in memory and, with a `cache_dir`, on disk.
  void record(const std::string& key, const std::string& tag, const std::string& cache_dir, MatmulPath path);
  Stats stats() const;
  /// Forgets the in-memory table (tests: the next find reads the disk).
  void forget_in_memory();
  /// True the first time `what` is asked about in this process (a path is reported once).
  bool first_time(const std::string& what);

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, MatmulPath> memory_;  // by tag + key
  std::unordered_set<std::string> reported_;
  Stats stats_;
};

/// Milliseconds of `run()`: the minimum of 3 runs after a warm-up one (robust to a busy
/// machine's stalls, which only ever add time).
double min_ms(const std::function<void()>& run);

/// The path for the 16-bit contraction `key` (its shape; `what` names it in the log, `where`
/// its source): recorded, or else timed with `time_native` / `time_widened` (ms) and recorded.
/// Logs the choice at KILN_LOG=2 with both implementations (`native_isa`, `widened_isa`).
MatmulPath choose_16bit_path(const std::string& where, const std::string& what, const std::string& key,
                             const std::string& native_isa, const std::string& widened_isa,
                             const std::string& cache_dir, const std::function<double()>& time_native,
                             const std::function<double()>& time_widened);

/// Says once per process (KILN_LOG=1), for `t` and `what` ("matmul", "convolution"), which path
/// 16-bit contractions take on this CPU under `choice`: oneDNN's 16-bit kernel `native_isa`
/// (empty: this CPU has none), f32 compute from 16-bit storage on `f32_isa`, or per shape.
void report_16bit_path(DType t, const std::string& what, MatmulOptions::Choice choice, const std::string& native_isa,
                       const std::string& f32_isa);

}  // namespace kiln::cpu
