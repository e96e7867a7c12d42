// MemoryPlan helpers: alias resolution and the largest batch that fits a memory limit.
#include "kiln/compiler/memory_plan.h"

#include <algorithm>

#include "kiln/core/check.h"

namespace kiln::compiler {

const ir::Instruction* MemoryPlan::storage_owner(const ir::Instruction* instruction) const {
  for (;;) {
    auto it = buffers.find(instruction);
    KILN_CHECK(it != buffers.end(), "no buffer planned for %", instruction->id());
    if (it->second.kind != BufferKind::kAlias) return instruction;
    instruction = it->second.alias_of;
  }
}

const BufferInfo& MemoryPlan::storage(const ir::Instruction* instruction) const {
  return buffers.at(storage_owner(instruction));
}

int64_t largest_fitting_batch(const std::function<int64_t(int64_t)>& peak_bytes_for_batch,
                              int64_t limit_bytes, int64_t known_batch, int64_t max_batch) {
  KILN_CHECK(known_batch >= 1 && max_batch >= 1, "batch sizes must be positive");
  // Invariant: lo fits (or is 0), hi does not fit (or is max_batch + 1).
  int64_t lo = 0, hi = max_batch + 1;
  auto peak = [&](int64_t b) {
    int64_t bytes = peak_bytes_for_batch(b);
    if (bytes <= limit_bytes) lo = std::max(lo, b);
    else hi = std::min(hi, b);
    return bytes;
  };
  auto probe = [&](int64_t b) { return peak(b) <= limit_bytes; };
  int64_t b1 = std::min(known_batch, max_batch);
  int64_t p1 = peak(b1);
  int64_t guess = b1;
  if (b1 > 1) {
    int64_t b0 = b1 / 2;
    int64_t p0 = peak(b0);
    double slope = static_cast<double>(p1 - p0) / static_cast<double>(b1 - b0);
    if (slope > 0)
      guess = b1 + static_cast<int64_t>(static_cast<double>(limit_bytes - p1) / slope);
    else
      guess = p1 <= limit_bytes ? max_batch : 0;
  }
  // First probes around the affine guess, then plain bisection.
  if (guess > lo && guess < hi && probe(guess) && guess + 1 < hi) probe(guess + 1);
  while (hi - lo > 1) probe(lo + (hi - lo) / 2);
  return lo;
}

}  // namespace kiln::compiler
