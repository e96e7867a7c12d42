// Pipeline statistics: per-stage element counts, rates and own work time, the parallelism and
// buffer sizes AUTOTUNE chose, and how long the consumer waited, so a trainer can say how much
// of each step went to waiting for data and which stage to speed up.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace kiln::data {

/// The clock stages are timed with: the CPU's time-stamp counter where there is one (about
/// 10 ns a read, against 25-45 ns for steady_clock), so every next() of every stage can be
/// timed; StatsRegistry converts ticks to seconds against steady_clock.
inline int64_t stage_clock_ticks() {
#if defined(__x86_64__)
  return static_cast<int64_t>(__rdtsc());
#else
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
#endif
}

class DatasetNode;

/// One stage of a running pipeline.
struct StageStats {
  std::string name;                // "map", "batch", "map_2" when a name repeats
  int64_t elements = 0;            // elements this stage produced
  double elements_per_second = 0;  // elements / pipeline wall time
  /// Seconds of this stage's own work (inputs excluded), divided by its parallelism: the wall
  /// time the stage alone would need. The largest is the bottleneck.
  double busy_seconds = 0;
  int parallelism = 0;  // threads working on the stage; 0 when it runs inline
  int buffer_size = 0;  // elements it may hold ahead of its consumer; 0 when none
  bool autotuned = false;
  /// A prefetch whose input runs ahead on its own threads: its buffer is part of the input's.
  bool buffer_lent_to_input = false;
};

/// A snapshot of Iterator::stats().
struct PipelineStats {
  std::vector<StageStats> stages;   // in data order: sources first
  double wall_seconds = 0;          // since the first next()
  double consumer_wait_seconds = 0; // time spent inside Iterator::next()
  int64_t consumer_elements = 0;    // elements next() returned

  /// The stage with the largest busy_seconds, or nullptr before any element flowed.
  const StageStats* slowest_stage() const;
  /// Multi-line table: name, elements, elements/s, busy s, parallelism, buffer.
  std::string to_string() const;
};

/// Live counters of one stage, shared by every iterator of that stage (repeat recreates its
/// input each epoch; the counts accumulate). Written by pipeline threads, read by stats().
struct StageCounters {
  std::atomic<int64_t> elements{0};
  std::atomic<int64_t> inclusive_ticks{0};  // stage_clock_ticks inside next(), inputs included
  std::atomic<int64_t> work_ns{0};       // own work of async stages (e.g. map fn time)
  std::atomic<int> parallelism{0};
  std::atomic<int> buffer_size{0};
  std::atomic<bool> autotuned{false};
  /// Async stages (parallel map, prefetch) report work_ns / parallelism as busy time; their
  /// inclusive time is their consumer's wait, which belongs to the stages upstream.
  std::atomic<bool> async{false};
  std::atomic<bool> buffer_lent_to_input{false};
};

/// Owns the counters of one Iterator's stages, keyed by recipe node.
class StatsRegistry {
 public:
  StatsRegistry();

  /// The counters of `node`, created on first use. Thread-safe.
  StageCounters* counters_for(const DatasetNode& node);
  /// Stages in data order, named "map", "map_2", ... in that order.
  PipelineStats snapshot(double wall_seconds) const;

 private:
  mutable std::mutex mu_;
  int64_t start_ticks_;  // calibrates ticks against steady_clock
  std::chrono::steady_clock::time_point start_time_;
  std::map<const DatasetNode*, StageCounters*> by_node_;
  std::vector<std::pair<const DatasetNode*, std::unique_ptr<StageCounters>>> ordered_;
};

}  // namespace kiln::data
