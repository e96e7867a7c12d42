// StatsRegistry: names each stage's counters and turns them into a PipelineStats snapshot in
// which every stage's own work excludes the time spent inside its inputs.
#include "kiln/data/pipeline_stats.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "kiln/data/iterator_base.h"

namespace kiln::data {

StatsRegistry::StatsRegistry()
    : start_ticks_(stage_clock_ticks()), start_time_(std::chrono::steady_clock::now()) {}

StageCounters* StatsRegistry::counters_for(const DatasetNode& node) {
  std::lock_guard lock(mu_);
  auto it = by_node_.find(&node);
  if (it != by_node_.end()) return it->second;
  auto counters = std::make_unique<StageCounters>();
  StageCounters* raw = counters.get();
  by_node_.emplace(&node, raw);
  ordered_.emplace_back(&node, std::move(counters));
  return raw;
}

PipelineStats StatsRegistry::snapshot(double wall_seconds) const {
  std::lock_guard lock(mu_);
  PipelineStats stats;
  stats.wall_seconds = wall_seconds;
  std::map<std::string, int> name_counts;
  const double elapsed_ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - start_time_).count());
  const double elapsed_ticks = static_cast<double>(stage_clock_ticks() - start_ticks_);
  const double ns_per_tick = elapsed_ticks > 0 ? elapsed_ns / elapsed_ticks : 1.0;
  // Stages register outermost first; report them in data order, sources first.
  for (auto it = ordered_.rbegin(); it != ordered_.rend(); ++it) {
    const auto& [node, c] = *it;
    StageStats s;
    const int n = ++name_counts[node->stage()];
    s.name = n == 1 ? node->stage() : node->stage() + "_" + std::to_string(n);
    s.elements = c->elements.load(std::memory_order_relaxed);
    s.elements_per_second = wall_seconds > 0 ? static_cast<double>(s.elements) / wall_seconds : 0;
    s.parallelism = c->parallelism.load(std::memory_order_relaxed);
    s.buffer_size = c->buffer_size.load(std::memory_order_relaxed);
    s.autotuned = c->autotuned.load(std::memory_order_relaxed);
    s.buffer_lent_to_input = c->buffer_lent_to_input.load(std::memory_order_relaxed);
    double own_ns = 0;
    if (c->async.load(std::memory_order_relaxed)) {
      own_ns = static_cast<double>(c->work_ns.load(std::memory_order_relaxed)) /
               std::max(1, s.parallelism);
    } else {
      double own_ticks = static_cast<double>(c->inclusive_ticks.load(std::memory_order_relaxed));
      for (const NodePtr& input : node->inputs()) {
        auto found = by_node_.find(input.get());
        if (found != by_node_.end())
          own_ticks -= static_cast<double>(found->second->inclusive_ticks.load(std::memory_order_relaxed));
      }
      own_ns = own_ticks * ns_per_tick;
    }
    s.busy_seconds = std::max(0.0, own_ns) * 1e-9;
    stats.stages.push_back(std::move(s));
  }
  return stats;
}

const StageStats* PipelineStats::slowest_stage() const {
  const StageStats* best = nullptr;
  for (const StageStats& s : stages)
    if (s.busy_seconds > 0 && (best == nullptr || s.busy_seconds > best->busy_seconds)) best = &s;
  return best;
}

std::string PipelineStats::to_string() const {
  std::ostringstream os;
  os << std::fixed << std::setprecision(3);
  os << "pipeline: " << consumer_elements << " elements in " << wall_seconds << " s, consumer waited "
     << consumer_wait_seconds << " s\n";
  os << std::left << std::setw(16) << "stage" << std::right << std::setw(12) << "elements"
     << std::setw(14) << "elements/s" << std::setw(10) << "busy s" << std::setw(9) << "threads"
     << std::setw(8) << "buffer" << "\n";
  const StageStats* slowest = slowest_stage();
  for (const StageStats& s : stages) {
    os << std::left << std::setw(16) << s.name << std::right << std::setw(12) << s.elements
       << std::setw(14) << std::setprecision(0) << s.elements_per_second << std::setw(10)
       << std::setprecision(3) << s.busy_seconds << std::setw(9) << s.parallelism << std::setw(8)
       << s.buffer_size << (s.autotuned ? " (autotuned)" : "")
       << (s.buffer_lent_to_input ? " (lent to its input)" : "") << (&s == slowest ? "  <- slowest" : "")
       << "\n";
  }
  return os.str();
}

}  // namespace kiln::data
