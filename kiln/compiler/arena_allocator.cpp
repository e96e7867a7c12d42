#include "kiln/compiler/arena_allocator.h"

#include <algorithm>
#include <numeric>

namespace kiln::compiler {

PackedArena pack_lifetimes(const std::vector<Lifetime>& values, int64_t alignment) {
  PackedArena packed;
  packed.offsets.assign(values.size(), 0);
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // By first step, then largest first (big blocks placed early fragment the arena least).
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return values[a].first != values[b].first ? values[a].first < values[b].first : values[a].bytes > values[b].bytes;
  });
  std::multimap<int, size_t> ending;  // last step -> value
  ArenaAllocator arena(alignment);
  auto release_before = [&](int step) {
    while (!ending.empty() && ending.begin()->first < step) {
      const size_t v = ending.begin()->second;
      arena.release(packed.offsets[v], values[v].bytes);
      ending.erase(ending.begin());
    }
  };
  for (size_t v : order) {
    const Lifetime& l = values[v];
    KILN_CHECK(l.first <= l.last, "a lifetime ends (step ", l.last, ") before it starts (step ", l.first, ")");
    if (l.bytes <= 0) continue;
    release_before(l.first);
    packed.offsets[v] = arena.allocate(l.bytes);
    ending.emplace(l.last, v);
  }
  packed.bytes = arena.high_water();
  return packed;
}

}  // namespace kiln::compiler
