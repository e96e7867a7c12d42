// InProcessCollectives: the rendezvous, the fixed-order sum and mean, the cross-process hooks
// (sum and, for the exchange, gather), and abort.
#include "kiln/distribute/in_process_collectives.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/ir/builder.h"
#include "kiln/ir/module.h"
#include "kiln/ir/reference_eval.h"
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

// One collective of `make` run by 4 replica threads through Collectives (the CPU lowering's
// calls), against the reference evaluator's evaluate_replicas: the same bytes, sums included.
struct Case {
  std::string name;
  Dims dims;
  std::function<ir::Instruction*(ir::Builder&, ir::Instruction*)> make;
};

TEST(InProcessCollectivesTest, EveryCollectiveGivesTheReferenceEvaluatorsBytes) {
  const std::vector<Dims> rows = {{0, 1}, {2, 3}}, cols = {{0, 2}, {1, 3}};
  const std::vector<Case> cases = {
      {"all_gather inner dim", {2, 3, 2}, [](ir::Builder& b, ir::Instruction* x) { return b.all_gather(x, 1, 4); }},
      {"all_gather in groups", {3, 2}, [&](ir::Builder& b, ir::Instruction* x) { return b.all_gather(x, 1, 2, cols); }},
      {"reduce_scatter inner dim", {3, 4, 2},
       [](ir::Builder& b, ir::Instruction* x) { return b.reduce_scatter(x, ir::ReduceKind::kSum, 1, 4); }},
      {"reduce_scatter mean in groups", {2, 6},
       [&](ir::Builder& b, ir::Instruction* x) { return b.reduce_scatter(x, ir::ReduceKind::kMean, 1, 2, rows); }},
      {"all_to_all 3-d", {2, 4, 3}, [](ir::Builder& b, ir::Instruction* x) { return b.all_to_all(x, 1, 2, 4); }},
      {"all_to_all last to first", {3, 8}, [](ir::Builder& b, ir::Instruction* x) { return b.all_to_all(x, 1, 0, 4); }},
      {"all_to_all in groups", {4, 2, 2}, [&](ir::Builder& b, ir::Instruction* x) { return b.all_to_all(x, 0, 2, 2, cols); }},
      {"collective_permute", {5}, [](ir::Builder& b, ir::Instruction* x) { return b.collective_permute(x, {{3, 0}, {0, 2}}, 4); }},
      {"collective_permute in groups", {2, 2},
       [&](ir::Builder& b, ir::Instruction* x) { return b.collective_permute(x, {{0, 1}}, 2, rows); }},
      {"all_reduce in groups", {3}, [&](ir::Builder& b, ir::Instruction* x) { return b.all_reduce(x, ir::ReduceKind::kSum, cols); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ir::Module m("m");
    ir::Builder b(m.entry());
    ir::Instruction* x = b.parameter(Shape(DType::kF32, c.dims), "x");
    ir::Instruction* y = c.make(b, x);
    m.entry()->set_outputs({y});
    // Replica r's x: uneven fractions, so a sum in another order would round differently.
    std::vector<std::vector<HostTensor>> args;
    for (int r = 0; r < 4; ++r) {
      HostTensor t(x->shape());
      auto d = t.data<float>();
      for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<float>(r + 1) / 3.f + static_cast<float>(i) * 1e-3f;
      args.push_back({t});
    }
    const auto want = ir::evaluate_replicas(*m.entry(), args);
    InProcessCollectives coll(4, 4);
    std::vector<HostTensor> got(4);
    const ir::Attrs& a = y->attrs();
    std::vector<std::thread> threads;
    for (int r = 0; r < 4; ++r)
      threads.emplace_back([&, r] {
        const HostTensor& in = args[static_cast<size_t>(r)][0];
        HostTensor out(y->shape());
        switch (y->opcode()) {
          case ir::Opcode::kAllGather: coll.all_gather(r, a.replica_groups, in.shape(), a.dims[0], in.raw_data(), out.raw_data()); break;
          case ir::Opcode::kReduceScatter:
            coll.reduce_scatter(r, a.replica_groups, a.reduce_kind, in.shape(), a.dims[0], in.raw_data(), out.raw_data());
            break;
          case ir::Opcode::kAllToAll:
            coll.all_to_all(r, a.replica_groups, in.shape(), a.dims[0], a.dims[1], in.raw_data(), out.raw_data());
            break;
          case ir::Opcode::kCollectivePermute:
            coll.collective_permute(r, a.replica_groups, a.source_target_pairs, in.shape(), in.raw_data(), out.raw_data());
            break;
          case ir::Opcode::kAllReduce:
            out = in.clone();
            coll.all_reduce_in_groups(r, a.replica_groups, a.reduce_kind, DType::kF32, out.raw_data(), out.num_elements());
            break;
#define KILN_SKIP_Collective
#include "kiln/ir/opcode_cases.inc"
            FAIL() << "not a collective";
        }
        got[static_cast<size_t>(r)] = out;
      });
    for (std::thread& t : threads) t.join();
    for (size_t r = 0; r < 4; ++r)
      EXPECT_EQ(got[r].to_vector<float>(), want[r][0].to_vector<float>()) << "replica " << r;
  }
}

}  // namespace
}  // namespace kiln::distribute
