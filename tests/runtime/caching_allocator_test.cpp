// The caching allocator: size classes, reuse across "steps", statistics, the limit, and blocks
// that outlive the allocator.
#include "kiln/runtime/caching_allocator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "kiln/core/error.h"
#include "tests/testing/expect_error.h"

namespace kiln::runtime {
namespace {

// Counts what reaches the underlying memory.
class CountingMemory final : public MemoryResource {
 public:
  explicit CountingMemory(int* live) : live_(live) {}
  void* allocate(int64_t bytes) override {
    ++*live_;
    return std::malloc(static_cast<size_t>(bytes));
  }
  void deallocate(void* p, int64_t) override {
    --*live_;
    std::free(p);
  }

 private:
  int* live_;
};

TEST(CachingAllocatorTest, SizeClasses) {
  EXPECT_EQ(CachingAllocator::size_class(0), 512);
  EXPECT_EQ(CachingAllocator::size_class(1), 512);
  EXPECT_EQ(CachingAllocator::size_class(513), 1024);
  EXPECT_EQ(CachingAllocator::size_class(1 << 20), 1 << 20);
  EXPECT_EQ(CachingAllocator::size_class((1 << 20) + 1), 2 << 20);
  EXPECT_EQ(CachingAllocator::size_class((5 << 20) + 7), 6 << 20);
}

TEST(CachingAllocatorTest, ASecondStepReusesTheFirstStepsBlocks) {
  int live = 0;
  CachingAllocator a("test:0", std::make_unique<CountingMemory>(&live), int64_t{1} << 30);
  std::set<std::byte*> first;
  for (int step = 0; step < 3; ++step) {
    auto x = a.allocate(100 * 1000), y = a.allocate(3 << 20), z = a.allocate(100 * 1000);
    if (step == 0) first = {x.get(), y.get(), z.get()};
    else EXPECT_EQ(first, (std::set<std::byte*>{x.get(), y.get(), z.get()}));
  }
  EXPECT_EQ(live, 3);
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.allocations, 9);
  EXPECT_EQ(s.cache_hits, 6);
  EXPECT_EQ(s.bytes_in_use, 0);
  const int64_t step_bytes = 2 * CachingAllocator::size_class(100 * 1000) + (4 << 20);
  EXPECT_EQ(s.peak_bytes_in_use, step_bytes);
  EXPECT_EQ(s.bytes_reserved, step_bytes);
  a.empty_cache();
  EXPECT_EQ(live, 0);
  EXPECT_EQ(a.stats().bytes_reserved, 0);
}

TEST(CachingAllocatorTest, TheLimitIsAnOutOfMemoryErrorNamingTheDevice) {
  int live = 0;
  CachingAllocator a("test:3", std::make_unique<CountingMemory>(&live), 4 << 20);
  auto held = a.allocate(3 << 20);  // a 4 MiB class
  KILN_EXPECT_ERROR(a.allocate(1000), OutOfMemoryError, "[test:3] cannot allocate 1000 bytes");
  held.reset();
  EXPECT_NO_THROW(a.allocate(1000));  // the cached 4 MiB block is given back to make room
  EXPECT_EQ(live, 1);
  EXPECT_EQ(a.stats().bytes_reserved, 1024);
}

TEST(CachingAllocatorTest, BlocksOutlivingTheAllocatorGoBackToTheMemory) {
  int live = 0;
  std::shared_ptr<std::byte> kept;
  {
    CachingAllocator a("test:0", std::make_unique<CountingMemory>(&live), 1 << 20);
    kept = a.allocate(64);
    a.allocate(64);  // cached, freed with the allocator
  }
  EXPECT_EQ(live, 1);
  kept.reset();
  EXPECT_EQ(live, 0);
}

}  // namespace
}  // namespace kiln::runtime
