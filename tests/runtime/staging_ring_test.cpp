// The staging ring's reuse rules, on the CPU: slots go round robin, a slot is handed out again
// only after the copy that last used it finished (or failed), it grows to the largest copy,
// and the copy's device memory is kept until then.
#include "kiln/runtime/staging_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "kiln/core/error.h"

namespace kiln::runtime {
namespace {

// Host memory that counts what is outstanding (stands in for cuMemHostAlloc).
class CountingMemory final : public MemoryResource {
 public:
  explicit CountingMemory(int64_t& outstanding) : outstanding_(outstanding) {}
  void* allocate(int64_t bytes) override {
    outstanding_ += bytes;
    return std::malloc(static_cast<size_t>(bytes));
  }
  void deallocate(void* p, int64_t bytes) override {
    outstanding_ -= bytes;
    std::free(p);
  }

 private:
  int64_t& outstanding_;
};

TEST(StagingRingTest, SlotsGoRoundRobinAndAreReusedOnceTheirCopyFinished) {
  int64_t outstanding = 0;
  StagingRing ring(std::make_unique<CountingMemory>(outstanding), 3);
  Event copies[3] = {Event::pending(), Event::pending(), Event::pending()};
  std::byte* data[3] = {};
  for (int i = 0; i < 3; ++i) {
    StagingRing::Slot s = ring.acquire(100);
    EXPECT_EQ(s.index, i);
    EXPECT_GE(s.bytes, 100);
    data[i] = s.data;
    ring.release(s, copies[i]);
  }
  EXPECT_NE(data[0], data[1]);
  EXPECT_NE(data[1], data[2]);
  EXPECT_EQ(outstanding, 300);

  // The fourth copy needs slot 0, whose copy is still running: it waits for it.
  std::atomic<bool> got{false};
  StagingRing::Slot again;
  std::thread next([&] {
    again = ring.acquire(100);
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(got);
  copies[1].complete();  // another slot finishing does not release slot 0
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(got);
  copies[0].complete();
  next.join();
  EXPECT_EQ(again.index, 0);
  EXPECT_EQ(again.data, data[0]);  // big enough: the same memory
  ring.release(again, Event());
  EXPECT_EQ(ring.stats().waits, 1);

  // Slot 1's copy finished: no wait, and a larger request regrows it.
  StagingRing::Slot big = ring.acquire(1000);
  EXPECT_EQ(big.index, 1);
  EXPECT_GE(big.bytes, 1000);
  EXPECT_EQ(outstanding, 1200);
  EXPECT_EQ(ring.stats().grows, 4);
  EXPECT_EQ(ring.stats().bytes_reserved, 1200);
  EXPECT_EQ(ring.stats().waits, 1);
  ring.release(big, Event());
  copies[2].complete();
}

TEST(StagingRingTest, AFailedCopyFreesItsSlot) {
  int64_t outstanding = 0;
  StagingRing ring(std::make_unique<CountingMemory>(outstanding), 1);
  Event copy = Event::pending();
  ring.release(ring.acquire(8), copy);
  copy.fail(std::make_exception_ptr(std::runtime_error("DMA failed")));
  StagingRing::Slot s = ring.acquire(8);  // does not throw: the error is the copy's reader's
  EXPECT_EQ(s.index, 0);
  ring.release(s, Event());
}

TEST(StagingRingTest, TheCopysDeviceMemoryIsKeptUntilTheSlotIsReused) {
  int64_t outstanding = 0;
  StagingRing ring(std::make_unique<CountingMemory>(outstanding), 2);
  auto device_memory = std::make_shared<int>(7);
  std::weak_ptr<int> watch = device_memory;
  Event copy = Event::pending();
  ring.release(ring.acquire(8), copy, std::move(device_memory));
  EXPECT_FALSE(watch.expired());  // the buffer was dropped, the copy still writes it
  copy.complete();
  ring.release(ring.acquire(8), Event());  // slot 1
  EXPECT_FALSE(watch.expired());
  ring.release(ring.acquire(8), Event());  // slot 0 again: its copy is done
  EXPECT_TRUE(watch.expired());
}

TEST(StagingRingTest, ASlotHeldTwiceIsAnError) {
  int64_t outstanding = 0;
  StagingRing ring(std::make_unique<CountingMemory>(outstanding), 1);
  StagingRing::Slot s = ring.acquire(8);
  EXPECT_THROW(ring.acquire(8), InternalError);
  ring.release(s, Event());
  EXPECT_THROW(ring.release(s, Event()), InternalError);
}

TEST(StagingRingTest, DestructionWaitsForCopiesAndFreesEverySlot) {
  int64_t outstanding = 0;
  Event copy = Event::pending();
  std::thread finisher;
  {
    StagingRing ring(std::make_unique<CountingMemory>(outstanding), 2);
    ring.release(ring.acquire(64), copy);
    finisher = std::thread([copy] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      copy.complete();
    });
  }
  EXPECT_TRUE(copy.ready());
  EXPECT_EQ(outstanding, 0);
  finisher.join();
}

}  // namespace
}  // namespace kiln::runtime
