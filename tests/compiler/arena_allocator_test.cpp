// pack_lifetimes: values share arena bytes only when their lifetimes are disjoint.
#include "kiln/compiler/arena_allocator.h"

#include <gtest/gtest.h>

#include <random>

namespace kiln::compiler {
namespace {

TEST(PackLifetimesTest, DisjointLifetimesShareBytesAndOverlappingOnesDoNot) {
  // a: steps 0-1, b: 2-3 (after a: reuses a's bytes), c: 1-2 (overlaps both), d: 3 (after c:
  // takes c's bytes; b is still live at step 3).
  const PackedArena p = pack_lifetimes({{1000, 0, 1}, {1000, 2, 3}, {100, 1, 2}, {10, 3, 3}}, 64);
  EXPECT_EQ(p.offsets[0], p.offsets[1]);
  EXPECT_NE(p.offsets[2], p.offsets[0]);
  EXPECT_NE(p.offsets[3], p.offsets[1]);
  EXPECT_EQ(p.offsets[3], p.offsets[2]);
  EXPECT_EQ(p.bytes, 1024 + 128);
  for (int64_t o : p.offsets) EXPECT_EQ(o % 64, 0);
}

TEST(PackLifetimesTest, AValueStartingAtTheStepAnotherEndsDoesNotTakeItsBytes) {
  // A step reads its operands while it writes its result.
  const PackedArena p = pack_lifetimes({{512, 0, 4}, {512, 4, 6}}, 64);
  EXPECT_NE(p.offsets[0], p.offsets[1]);
  EXPECT_EQ(p.bytes, 1024);
}

TEST(PackLifetimesTest, EmptyValuesTakeNoSpace) {
  const PackedArena p = pack_lifetimes({{0, 0, 5}, {256, 1, 2}}, 256);
  EXPECT_EQ(p.bytes, 256);
}

TEST(PackLifetimesTest, RandomLifetimesNeverOverlapInTimeAndSpace) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<Lifetime> v(200);
    for (Lifetime& l : v) {
      l.first = static_cast<int>(rng() % 100);
      l.last = l.first + static_cast<int>(rng() % 20);
      l.bytes = static_cast<int64_t>(rng() % 5000);
    }
    const PackedArena p = pack_lifetimes(v, 256);
    int64_t sum = 0, peak_live = 0;
    for (int step = 0; step < 120; ++step) {
      int64_t live = 0;
      for (const Lifetime& l : v) live += l.first <= step && step <= l.last ? round_up(l.bytes, 256) : 0;
      peak_live = std::max(peak_live, live);
    }
    for (size_t a = 0; a < v.size(); ++a) {
      sum += round_up(v[a].bytes, 256);
      EXPECT_LE(p.offsets[a] + v[a].bytes, p.bytes);
      for (size_t b = a + 1; b < v.size(); ++b) {
        if (v[a].bytes == 0 || v[b].bytes == 0) continue;
        const bool in_time = v[a].first <= v[b].last && v[b].first <= v[a].last;
        const bool in_space = p.offsets[a] < p.offsets[b] + v[b].bytes && p.offsets[b] < p.offsets[a] + v[a].bytes;
        ASSERT_FALSE(in_time && in_space) << "values " << a << " and " << b << " overlap";
      }
    }
    EXPECT_GE(p.bytes, peak_live);
    EXPECT_LT(p.bytes, sum);  // reuse happened
  }
}

TEST(PackLifetimesTest, ALifetimeEndingBeforeItStartsIsAnInternalError) {
  EXPECT_THROW(pack_lifetimes({{8, 3, 1}}, 8), InternalError);
}

}  // namespace
}  // namespace kiln::compiler
