// Core count and the chunk-size rule of AUTOTUNE (see autotune.h for the reasoning).
#include "kiln/data/autotune.h"

#include <cmath>
#include <thread>

#include "kiln/core/check.h"

namespace kiln::data {

int available_cores() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

int resolve_parallelism(int requested, const char* where) {
  if (requested == kAutotune) return available_cores();
  if (requested <= 0)
    KILN_THROW(ValueError, "[", where, "] num_parallel_calls must be positive or kAutotune (-1), received ",
               requested, ".");
  return requested;
}

void ChunkTuner::record(int n, double seconds) {
  if (n <= 0) return;
  const double t = seconds / n;
  // An exponential moving average: quick to follow a changing function, robust to one outlier.
  per_element_ = per_element_ < 0 ? t : 0.8 * per_element_ + 0.2 * t;
  const double want = per_element_ > 0 ? kTargetChunkSeconds / per_element_ : max_chunk_;
  chunk_ = static_cast<int>(std::clamp(std::floor(want), 1.0, static_cast<double>(max_chunk_)));
}

}  // namespace kiln::data
