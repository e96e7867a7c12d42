// InProcessCollectives: the rendezvous, the fixed-order sum and mean, the cross-process hooks
// (sum and, for the exchange, gather), and abort.
#include "kiln/distribute/in_process_collectives.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
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

// Two processes of two replicas each, in one test: their cross-process gather meets here
// (as MPI_Allgather: every process gets both processes' bytes, process 0's first).
class TwoProcessGather {
 public:
  void gather(int process, const void* in, int64_t bytes, void* out) {
    std::unique_lock<std::mutex> lock(mutex_);
    parts_[static_cast<size_t>(process)].assign(static_cast<const std::byte*>(in), static_cast<const std::byte*>(in) + bytes);
    barrier(lock);  // both parts are in
    std::memcpy(out, parts_[0].data(), static_cast<size_t>(bytes));
    std::memcpy(static_cast<std::byte*>(out) + bytes, parts_[1].data(), static_cast<size_t>(bytes));
    barrier(lock);  // both copied them: the next gather may overwrite them
  }

 private:
  void barrier(std::unique_lock<std::mutex>& lock) {
    const uint64_t generation = generation_;
    if (++arrived_ == 2) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != generation; });
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<std::byte> parts_[2];
};

TEST(InProcessCollectivesTest, TheExchangeSeesEveryProcesssReplicasInGlobalOrder) {
  TwoProcessGather world;
  auto unused_sum = [](DType, void*, int64_t) {};
  std::vector<std::unique_ptr<InProcessCollectives>> processes;
  for (int p = 0; p < 2; ++p)
    processes.push_back(std::make_unique<InProcessCollectives>(
        2, 4, unused_sum, [&world, p](const void* in, int64_t bytes, void* out) { world.gather(p, in, bytes, out); }, p));
  // Global replica g = 2p + r offers {g, 10g}; all_gather along dim 0 of [1, 2] lays them out
  // in global order; collective_permute(g -> g+1 mod 4) hands g-1's to g.
  std::vector<std::vector<float>> gathered(4, std::vector<float>(8)), permuted(4, std::vector<float>(2));
  std::vector<std::thread> threads;
  for (int p = 0; p < 2; ++p)
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, p, r] {
        const int g = 2 * p + r;
        EXPECT_EQ(processes[static_cast<size_t>(p)]->global_replica_id(r), g);
        const float x[2] = {static_cast<float>(g), 10.f * static_cast<float>(g)};
        const Shape shape(DType::kF32, {1, 2});
        processes[static_cast<size_t>(p)]->all_gather(r, {}, shape, 0, x, gathered[static_cast<size_t>(g)].data());
        processes[static_cast<size_t>(p)]->collective_permute(r, {}, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}, shape, x,
                                                              permuted[static_cast<size_t>(g)].data());
      });
  for (std::thread& t : threads) t.join();
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(gathered[static_cast<size_t>(g)], (std::vector<float>{0, 0, 1, 10, 2, 20, 3, 30}));
    const float from = static_cast<float>((g + 3) % 4);
    EXPECT_EQ(permuted[static_cast<size_t>(g)], (std::vector<float>{from, 10 * from}));
  }
}

}  // namespace
}  // namespace kiln::distribute
