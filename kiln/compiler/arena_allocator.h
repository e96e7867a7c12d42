// ArenaAllocator: best-fit offsets in one growing arena, the packing behind plan_memory (the
// CPU's step arena) and the CUDA executable's step arena; pack_lifetimes packs values whose
// lifetimes over a program's steps are known.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <vector>

#include "kiln/core/check.h"

namespace kiln::compiler {

inline int64_t round_up(int64_t n, int64_t alignment) { return (n + alignment - 1) / alignment * alignment; }

// Best-fit allocator over one growing arena; freed blocks coalesce with their neighbours.
class ArenaAllocator {
 public:
  explicit ArenaAllocator(int64_t alignment) : alignment_(alignment) {}

  int64_t allocate(int64_t bytes) {
    int64_t size = round_up(bytes, alignment_);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= size && (best == free_.end() || it->second < best->second)) best = it;
    if (best != free_.end()) {
      int64_t offset = best->first;
      int64_t rest = best->second - size;
      free_.erase(best);
      if (rest > 0) free_[offset + size] = rest;
      return offset;
    }
    // No block fits: grow the arena, starting inside a free block at its end if there is one.
    int64_t offset = top_;
    if (!free_.empty() && std::prev(free_.end())->first + std::prev(free_.end())->second == top_) {
      offset = std::prev(free_.end())->first;
      free_.erase(std::prev(free_.end()));
    }
    top_ = offset + size;
    high_water_ = std::max(high_water_, top_);
    return offset;
  }

  void release(int64_t offset, int64_t bytes) {
    int64_t size = round_up(bytes, alignment_);
    auto [it, inserted] = free_.emplace(offset, size);
    KILN_CHECK(inserted, "arena block at ", offset, " freed twice");
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }

  int64_t high_water() const { return high_water_; }

 private:
  int64_t alignment_;
  std::map<int64_t, int64_t> free_;  // offset -> size
  int64_t top_ = 0;
  int64_t high_water_ = 0;
};

/// A value to place: `bytes` needed from the start of step `first` to the end of step `last`
/// (first <= last; bytes 0 gets offset 0 and no space).
struct Lifetime {
  int64_t bytes = 0;
  int first = 0, last = 0;
};

struct PackedArena {
  std::vector<int64_t> offsets;  // per lifetime
  int64_t bytes = 0;             // the arena's size
};

/// Best-fit offsets for `values` in one arena of `alignment`-aligned blocks: two values share
/// bytes only when their lifetimes do not overlap. Steps are visited in order; at each, the
/// values starting there are placed (largest first), then those ending there are released.
PackedArena pack_lifetimes(const std::vector<Lifetime>& values, int64_t alignment);

}  // namespace kiln::compiler
