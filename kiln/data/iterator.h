// Iterator: a running pipeline made by Dataset::iterator(). It hands out elements, saves and
// restores its exact position, and reports per-stage statistics.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "kiln/data/element.h"
#include "kiln/data/iterator_base.h"
#include "kiln/data/pipeline_stats.h"

namespace kiln::data {

/// The running pipeline of a Dataset. Movable, not copyable; destroying it stops and joins
/// every pipeline thread. One thread at a time may use it.
class Iterator {
 public:
  Iterator(NodePtr recipe, uint64_t epoch);
  ~Iterator();
  Iterator(Iterator&&) noexcept;
  Iterator& operator=(Iterator&&) noexcept;

  /// The next element, or nullopt when the dataset is exhausted. A failure anywhere in the
  /// pipeline (a map function, a reader, a prefetch thread) arrives here as a DataError that
  /// names the stage.
  std::optional<Element> next();

  /// The position as bytes: every stage's counters, shuffle RNG state and buffered elements,
  /// and the elements prefetch and parallel map hold but the consumer has not taken yet.
  std::vector<uint8_t> save();
  /// Continues from a position save() returned by an iterator of the same recipe and epoch:
  /// the elements that follow are exactly those the saved iterator would have produced.
  /// Throws DataError for a blob from another recipe or a corrupt one.
  void restore(std::span<const uint8_t> state);

  /// Per-stage throughput, own work time, autotuned sizes and the consumer's wait so far.
  PipelineStats stats() const;

 private:
  NodePtr recipe_;
  uint64_t epoch_;
  std::unique_ptr<StatsRegistry> registry_;  // outlives root_, whose stages point into it
  IteratorPtr root_;
  std::optional<std::chrono::steady_clock::time_point> started_;
  int64_t wait_ns_ = 0;
  int64_t consumed_ = 0;
};

}  // namespace kiln::data
