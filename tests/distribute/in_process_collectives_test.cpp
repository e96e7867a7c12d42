// InProcessCollectives: the rendezvous, the fixed-order sum and mean, the cross-process hook,
// and abort.
#include "kiln/distribute/in_process_collectives.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "tests/testing/expect_error.h"

namespace kiln::distribute {
namespace {

// Each of `n` threads all-reduces its vector; returns them afterwards.
std::vector<std::vector<float>> reduce_on_threads(InProcessCollectives& c, std::vector<std::vector<float>> data,
                                                  ir::ReduceKind kind) {
  std::vector<std::thread> threads;
  for (int r = 0; r < static_cast<int>(data.size()); ++r)
    threads.emplace_back([&, r] {
      c.all_reduce(r, kind, DType::kF32, data[static_cast<size_t>(r)].data(),
                   static_cast<int64_t>(data[static_cast<size_t>(r)].size()));
    });
  for (std::thread& t : threads) t.join();
  return data;
}

TEST(InProcessCollectivesTest, SumsInReplicaOrderOnEveryReplica) {
  InProcessCollectives c(3, 3);
  // 1e8 + 1 - 1e8 in f32 is 0 in order 0+1+2 (1e8 + 1 rounds to 1e8), 1 in another order.
  auto out = reduce_on_threads(c, {{1e8f, 1.f}, {1.f, 2.f}, {-1e8f, 3.f}}, ir::ReduceKind::kSum);
  for (const auto& v : out) EXPECT_EQ(v, (std::vector<float>{0.f, 6.f}));
  out = reduce_on_threads(c, {{2.f}, {4.f}, {9.f}}, ir::ReduceKind::kMean);
  for (const auto& v : out) EXPECT_EQ(v, (std::vector<float>{5.f}));
}

TEST(InProcessCollectivesTest, CrossProcessSumJoinsTheLocalSumAndTheMeanCountsEveryReplica) {
  int calls = 0;
  InProcessCollectives c(2, 4, [&](DType, void* data, int64_t count) {
    ++calls;
    for (int64_t i = 0; i < count; ++i) static_cast<float*>(data)[i] *= 2;  // another process with the same sum
  });
  EXPECT_EQ(c.num_replicas(), 4);
  auto out = reduce_on_threads(c, {{1.f}, {3.f}}, ir::ReduceKind::kMean);
  EXPECT_EQ(calls, 1);
  for (const auto& v : out) EXPECT_EQ(v, (std::vector<float>{2.f}));  // (1 + 3) * 2 / 4
}

TEST(InProcessCollectivesTest, RejectsDTypesItCannotSum) {
  InProcessCollectives c(1, 1);
  uint8_t x = 1;
  KILN_EXPECT_ERROR(c.all_reduce(0, ir::ReduceKind::kSum, DType::kU8, &x, 1), DTypeError, "received u8");
}

TEST(InProcessCollectivesTest, AbortReleasesAWaitingReplicaUntilReset) {
  InProcessCollectives c(2, 2);
  bool released = false;
  std::thread waiter([&] {
    float x = 1;
    try {
      c.all_reduce(0, ir::ReduceKind::kSum, DType::kF32, &x, 1);
    } catch (const ReplicaAborted&) {
      released = true;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  c.abort();
  waiter.join();
  EXPECT_TRUE(released);
  c.reset();
  auto out = reduce_on_threads(c, {{1.f}, {2.f}}, ir::ReduceKind::kSum);
  EXPECT_EQ(out[1], (std::vector<float>{3.f}));
}

}  // namespace
}  // namespace kiln::distribute
