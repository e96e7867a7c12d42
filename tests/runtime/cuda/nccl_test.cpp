// NCCL all_reduce among the GPUs of one process (MirroredStrategy's replicas on GPUs): with two
// GPUs or more, programs on cuda:0 and cuda:1 reduce device buffers (sum and mean, f32 and
// bf16) and host values reduce through the GPUs; with fewer they skip, naming why. NCCL's
// loading and the errors without GPUs are checked here (host collectives of several replicas:
// tests/e2e/cuda_strategy_test.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <future>
#include <thread>

#include "kiln/ir/builder.h"
#include "kiln/runtime/cuda/cuda_backend.h"
#include "kiln/runtime/cuda/nccl_collectives.h"
#include "kiln/runtime/cuda/nccl_collectives_impl.h"
#include "tests/testing/backend_conformance.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/gpu_backend.h"

namespace kiln::cuda {
namespace {

using ir::Builder;
using ir::ReduceKind;

// A program whose outputs are the sum and the mean of its argument over the replicas.
std::unique_ptr<ir::Module> reduce_program(DType t, int64_t n) {
  auto m = std::make_unique<ir::Module>("all_reduce");
  Builder b(m->entry());
  ir::Instruction* x = b.parameter(Shape(t, {n}), "x");
  m->entry()->set_outputs({b.all_reduce(x, ReduceKind::kSum), b.all_reduce(x, ReduceKind::kMean)});
  return m;
}

// `out` (reduce_program's outputs on one replica) are the sum and the mean of the two
// replicas' inputs `x`, within `tol` relative.
void expect_sum_and_mean(const std::vector<HostTensor>& out, const std::vector<HostTensor>& x, double tol,
                         const std::string& who) {
  ASSERT_EQ(out.size(), 2u) << who;
  const std::vector<double> a = x[0].to_vector<double>(), b = x[1].to_vector<double>();
  const std::vector<double> sum = out[0].to_vector<double>(), mean = out[1].to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(sum[i], a[i] + b[i], tol * (1 + std::fabs(a[i] + b[i]))) << who << " [" << i << "]";
    ASSERT_NEAR(mean[i], (a[i] + b[i]) / 2, tol * (1 + std::fabs(a[i] + b[i]))) << who << " [" << i << "]";
  }
}

TEST(NcclTest, NcclLoadsWithoutAGpu) { EXPECT_EQ(nccl_version().rfind("2.", 0), 0u) << nccl_version(); }

TEST(NcclTest, FewerThanTwoDistinctGpusIsAValueError) {
  KILN_EXPECT_ERROR(make_nccl_collectives({0}), ValueError, "[cuda] NCCL all_reduce needs two or more distinct GPUs, received cuda:0.");
  KILN_EXPECT_ERROR(make_nccl_collectives({1, 1}), ValueError, "received cuda:1, cuda:1.");
}

TEST(NcclTest, WithoutTwoGpusTheCollectivesSayWhy) {
  const runtime::GpuSurvey s = runtime::find_gpus();
  if (s.gpus.size() >= 2) GTEST_SKIP() << "this machine has " << s.gpus.size() << " GPUs";
  try {
    make_nccl_collectives({0, 1});
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[cuda] NCCL all_reduce over cuda:0, cuda:1: "), std::string::npos) << what;
    const std::string reason = s.gpus.empty() ? s.none_because : "no device cuda:1: this machine has 1 GPU.";
    EXPECT_NE(what.find(reason), std::string::npos) << what << "\nexpected the reason: " << reason;
  }
}

#define KILN_TWO_GPUS_OR_SKIP()                                                                    \
  const runtime::GpuSurvey survey_ = runtime::find_gpus();                                         \
  if (survey_.gpus.size() < 2)                                                                     \
  GTEST_SKIP() << "no CUDA device: NCCL needs 2 GPUs, this machine has " << survey_.gpus.size()   \
               << (survey_.gpus.empty() ? " (" + survey_.none_because + ")" : std::string())

TEST(NcclTest, TwoGpusReduceDeviceBuffersInTheirPrograms) {
  KILN_TWO_GPUS_OR_SKIP();
  std::shared_ptr<runtime::Collectives> nccl = make_nccl_collectives({0, 1});
  for (DType t : {DType::kF32, DType::kBF16}) {
    const int64_t n = 1000;
    std::vector<HostTensor> x = {testing::random_tensor(Shape(t, {n}), 1), testing::random_tensor(Shape(t, {n}), 2)};
    std::vector<std::vector<HostTensor>> out(2);
    std::vector<std::string> steps(2);
    auto replica = [&](int r) {
      std::unique_ptr<runtime::Backend> gpu = make_cuda_backend(r);
      runtime::CompileOptions options;
      options.collectives = nccl;
      options.replica_id = r;
      auto exe = gpu->compile(reduce_program(t, n), options);
      steps[static_cast<size_t>(r)] = exe->describe();
      std::vector<HostTensor> args = {x[static_cast<size_t>(r)]};
      out[static_cast<size_t>(r)] = exe->run(args);
    };
    std::thread second(replica, 1);
    replica(0);
    second.join();
    for (size_t r = 0; r < 2; ++r) {
      EXPECT_NE(steps[r].find("all_reduce(nccl, 2 replicas"), std::string::npos) << steps[r];
      expect_sum_and_mean(out[r], x, t == DType::kF32 ? 1e-6 : 1e-2, str_cat(name(t), " replica ", r));
    }
  }
}

TEST(NcclTest, TwoGpusReduceHostValuesThroughTheGpus) {
  KILN_TWO_GPUS_OR_SKIP();
  std::shared_ptr<runtime::Collectives> nccl = make_nccl_collectives({0, 1});
  std::vector<std::vector<int64_t>> values = {{1, 2, 3, -4}, {10, 20, 30, 40}};
  std::thread second([&] { nccl->all_reduce(1, ReduceKind::kSum, DType::kI64, values[1].data(), 4); });
  nccl->all_reduce(0, ReduceKind::kSum, DType::kI64, values[0].data(), 4);
  second.join();
  for (const std::vector<int64_t>& v : values) EXPECT_EQ(v, (std::vector<int64_t>{11, 22, 33, 36}));
}

// NCCL across processes (MultiWorkerMirroredStrategy over GPUs), with the two "processes" as
// two threads: rank 0's id reaches rank 1 through a promise instead of MPI_Bcast, and each
// rank's one replica (local replica 0) reduces on its own GPU with the other's.
TEST(NcclTest, TwoGpusJoinAsTheRanksOfTwoProcesses) {
  KILN_TWO_GPUS_OR_SKIP();
  std::promise<std::vector<uint8_t>> id;
  std::shared_future<std::vector<uint8_t>> sent = id.get_future().share();
  const int64_t n = 1000;
  std::vector<HostTensor> x = {testing::random_tensor(Shape(DType::kF32, {n}), 3),
                               testing::random_tensor(Shape(DType::kF32, {n}), 4)};
  std::vector<std::vector<HostTensor>> out(2);
  auto rank = [&](int r) {
    runtime::CollectivesIdExchange exchange = [&, r](const std::string& why_not, const auto& make_id) {
      EXPECT_EQ(why_not, "") << "rank " << r;
      if (r == 0) id.set_value(make_id());
      return sent.get();
    };
    std::shared_ptr<runtime::Collectives> nccl = make_nccl_collectives_across_processes(r, r, 2, exchange);
    EXPECT_EQ(nccl->num_replicas(), 2);
    std::unique_ptr<runtime::Backend> gpu = make_cuda_backend(r);
    runtime::CompileOptions options;
    options.collectives = nccl;
    options.replica_id = 0;  // the process's one replica
    auto exe = gpu->compile(reduce_program(DType::kF32, n), options);
    std::vector<HostTensor> args = {x[static_cast<size_t>(r)]};
    out[static_cast<size_t>(r)] = exe->run(args);
  };
  std::thread second(rank, 1);
  rank(0);
  second.join();
  for (size_t r = 0; r < 2; ++r) expect_sum_and_mean(out[r], x, 1e-6, str_cat("rank ", r));
}

// A replica whose peer failed before its all_reduce would wait on the GPU forever: abort()
// (Strategy::run calls it when a replica throws) ends the reduction and the waiting replica
// throws ReplicaAborted; after reset() both replicas reduce again.
TEST(NcclTest, TwoGpusAbortReleasesAReplicaWhosePeerFailed) {
  KILN_TWO_GPUS_OR_SKIP();
  auto nccl = std::dynamic_pointer_cast<NcclCollectives>(make_nccl_collectives({0, 1}));
  ASSERT_NE(nccl, nullptr);
  std::vector<std::unique_ptr<runtime::Backend>> gpus;
  std::vector<std::unique_ptr<runtime::Executable>> exes;
  for (int r = 0; r < 2; ++r) {
    runtime::CompileOptions options;
    options.collectives = nccl;
    options.replica_id = r;
    gpus.push_back(make_cuda_backend(r));
    exes.push_back(gpus.back()->compile(reduce_program(DType::kF32, 8), options));
  }
  std::vector<HostTensor> args = {testing::random_tensor(Shape(DType::kF32, {8}), 5)};
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // replica 1 "failed": it never reduces
    nccl->abort();
  });
  EXPECT_THROW(exes[0]->run(args), runtime::ReplicaAborted);
  aborter.join();
  EXPECT_THROW(nccl->throw_if_aborted(), runtime::ReplicaAborted);
  nccl->reset();
  std::vector<std::vector<HostTensor>> out(2);
  std::thread second([&] {
    std::vector<HostTensor> a = args;
    out[1] = exes[1]->run(a);
  });
  std::vector<HostTensor> a = args;
  out[0] = exes[0]->run(a);
  second.join();
  for (const auto& o : out) EXPECT_EQ(o.at(0).to_vector<float>()[3], 2 * args[0].to_vector<float>()[3]);
}

TEST(NcclTest, ARankWithoutItsGpuFailsInTheExchange) {
  const runtime::GpuSurvey s = runtime::find_gpus();
  if (s.gpus.size() >= 8) GTEST_SKIP() << "this machine has cuda:7";
  std::string told;
  runtime::CollectivesIdExchange exchange = [&](const std::string& why_not, const auto&) -> std::vector<uint8_t> {
    told = why_not;
    if (!why_not.empty()) throw ConfigError("every rank fails: " + why_not);
    return {};
  };
  KILN_EXPECT_ERROR(make_nccl_collectives_across_processes(7, 1, 2, exchange), ConfigError, "every rank fails: ");
  EXPECT_NE(told.find("[cuda] NCCL all_reduce across processes on cuda:7: "), std::string::npos) << told;
  KILN_EXPECT_ERROR(make_nccl_collectives_across_processes(0, 2, 2, exchange), ConfigError,
                    "needs two or more ranks and 0 <= rank < ranks, received rank 2 of 2");
}

}  // namespace
}  // namespace kiln::cuda
