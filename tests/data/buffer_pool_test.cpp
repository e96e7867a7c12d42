// BufferPool: reuse only after the last reference is gone, bounded idle list, pool lifetime.
#include "kiln/data/buffer_pool.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace kiln::data {
namespace {

const Shape kShape(DType::kF32, {4, 8});

TEST(BufferPoolTest, ReusesABufferOnlyAfterItsLastReferenceIsGone) {
  auto pool = BufferPool::create(/*max_free=*/4);
  HostTensor a = pool->acquire(kShape);
  HostTensor row = a.slice_rows(1, 2);  // a consumer keeps part of the batch
  const void* a_data = a.raw_data();
  a = HostTensor();
  EXPECT_EQ(pool->free_count(), 0);
  HostTensor b = pool->acquire(kShape);
  EXPECT_NE(b.raw_data(), a_data);  // `row` still references a's buffer
  EXPECT_EQ(pool->allocations(), 2);
  row = HostTensor();
  EXPECT_EQ(pool->free_count(), 1);
  HostTensor c = pool->acquire(kShape);
  EXPECT_EQ(c.raw_data(), a_data);  // now it comes back
  EXPECT_EQ(pool->allocations(), 2);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c.raw_data()) % kHostAlignment, 0u);
  EXPECT_EQ(c.shape(), kShape);
}

TEST(BufferPoolTest, HandsOutOnlyBuffersOfTheRequestedSize) {
  auto pool = BufferPool::create(/*max_free=*/4);
  pool->acquire(Shape(DType::kF32, {1000}));  // released at once
  EXPECT_EQ(pool->free_count(), 1);
  HostTensor small = pool->acquire(Shape(DType::kF32, {4}));
  EXPECT_EQ(pool->allocations(), 2);
  EXPECT_EQ(pool->free_count(), 1);
}

TEST(BufferPoolTest, KeepsAtMostMaxFreeIdleBuffers) {
  auto pool = BufferPool::create(/*max_free=*/2);
  std::vector<HostTensor> held;
  for (int i = 0; i < 5; ++i) held.push_back(pool->acquire(kShape));
  held.clear();
  EXPECT_EQ(pool->free_count(), 2);
}

TEST(BufferPoolTest, BuffersOutliveThePoolHandle) {
  auto pool = BufferPool::create(/*max_free=*/2);
  HostTensor t = pool->acquire(kShape);
  pool.reset();  // the iterator that owned the pool is gone
  for (float& v : t.data<float>()) v = 1.0f;  // the buffer is still valid
  EXPECT_EQ(t.data<float>()[31], 1.0f);
}  // releasing t frees the pool without touching freed memory (ASan/TSan builds check)

TEST(BufferPoolTest, BuffersMayBeReleasedOnOtherThreads) {
  auto pool = BufferPool::create(/*max_free=*/4);
  for (int round = 0; round < 50; ++round) {
    std::vector<HostTensor> batch;
    for (int i = 0; i < 4; ++i) batch.push_back(pool->acquire(kShape));
    std::thread consumer([b = std::move(batch)]() mutable { b.clear(); });
    HostTensor mine = pool->acquire(kShape);
    mine.data<float>()[0] = 1.0f;
    consumer.join();
  }
  EXPECT_LE(pool->free_count(), 4);
}

}  // namespace
}  // namespace kiln::data
