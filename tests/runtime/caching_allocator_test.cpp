// The caching allocator: size classes, reuse across "steps", statistics, the limit, and blocks
// that outlive the allocator; stream order (a block freed while a stream's work still uses it
// goes to that stream at once, to another stream or the host only once the work completed).
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

constexpr int kCompute = 1, kTransfer = 2;

// An allocator over counted memory, for the stream-order rules.
class CachingAllocatorStreamOrderTest : public ::testing::Test {
 protected:
  struct FreedWhileRunning {
    std::byte* block;
    Event done;
  };
  // A 4096-byte block used by work of `stream` that still runs (its event pending) when freed.
  FreedWhileRunning free_while_running(int stream) {
    auto x = a.allocate(4096, stream);
    FreedWhileRunning f{x.get(), Event::pending()};
    a.record_use(x, stream, f.done);
    return f;  // x goes: the block is cached with its use
  }
  int live = 0;
  CachingAllocator a{"test:0", std::make_unique<CountingMemory>(&live), int64_t{1} << 30};
};

TEST_F(CachingAllocatorStreamOrderTest, ABlockFreedWithPendingWorkGoesToTheSameStreamAtOnce) {
  const auto [block, step_done] = free_while_running(kCompute);
  auto y = a.allocate(4096, kCompute);
  EXPECT_EQ(y.get(), block) << "later work of the same stream runs after the step: the block is reusable";
  EXPECT_EQ(live, 1);
  y.reset();
  // The compute stream's reuse did not forget the step: the host still waits for it.
  auto h = a.allocate(4096);
  EXPECT_NE(h.get(), block);
  step_done.complete();
}

TEST_F(CachingAllocatorStreamOrderTest, ABlockFreedWithPendingWorkWaitsForItsEventBeforeAnotherStreamGetsIt) {
  const auto [block, step_done] = free_while_running(kCompute);
  auto copy_dst = a.allocate(4096, kTransfer);
  EXPECT_NE(copy_dst.get(), block) << "a copy on the transfer stream could overwrite what the step still reads";
  auto host = a.allocate(4096);
  EXPECT_NE(host.get(), block) << "the host could write it while the step still reads it";
  EXPECT_EQ(live, 3);
  step_done.complete();
  auto after = a.allocate(4096, kTransfer);
  EXPECT_EQ(after.get(), block) << "once the step completed, the block is free for every stream";
  EXPECT_EQ(live, 3);
}

TEST_F(CachingAllocatorStreamOrderTest, UsesOnTwoStreamsMustBothCompleteForTheHost) {
  auto x = a.allocate(600, kTransfer);
  std::byte* const block = x.get();
  const Event copied = Event::pending(), step_done = Event::pending();
  a.record_use(x, kTransfer, copied);
  a.record_use(x, kCompute, step_done);
  x.reset();
  step_done.complete();
  auto y = a.allocate(600);
  EXPECT_NE(y.get(), block) << "the copy still writes it";
  auto z = a.allocate(600, kTransfer);
  EXPECT_EQ(z.get(), block) << "the transfer stream's own copy is ordered before its later work";
  z.reset();  // y stays held, so the cache holds only `block`
  EXPECT_NE(a.allocate(600).get(), block) << "the copy still writes it";
  copied.complete();
  EXPECT_EQ(a.allocate(600).get(), block);
  EXPECT_EQ(live, 3);
}

TEST_F(CachingAllocatorStreamOrderTest, BlocksWithoutUsesAreReusedByAnyStream) {
  std::byte* block = a.allocate(4096, kCompute).get();
  EXPECT_EQ(a.allocate(4096, kTransfer).get(), block);
  EXPECT_EQ(a.allocate(4096).get(), block);
  EXPECT_EQ(live, 1);
}

}  // namespace
}  // namespace kiln::runtime
