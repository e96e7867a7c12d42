// MirroredStrategy over two GPUs: each replica traces and compiles the step for its own GPU,
// and the step's all_reduce meets the other replica's through NCCL, on the device. Skips with
// fewer than two GPUs, naming why (scripts/device_check.sh runs it only where two are). Here:
// a program for several replicas whose collectives are the host's (a CPU MirroredStrategy's)
// is a CompileError on the cuda backend, not a per-replica value.
#include <gtest/gtest.h>

#include "kiln/distribute/in_process_collectives.h"
#include "kiln/distribute/strategy.h"
#include "kiln/ir/builder.h"
#include "kiln/runtime/cuda/cuda_backend.h"
#include "kiln/runtime/gpus.h"
#include "kiln/trace/function.h"
#include "kiln/trace/ops/elementwise.h"
#include "tests/testing/expect_error.h"

namespace kiln {
namespace {

TEST(CudaStrategyTest, SeveralReplicasOverHostCollectivesAreACompileError) {
  auto m = std::make_unique<ir::Module>("all_reduce");
  ir::Builder b(m->entry());
  ir::Instruction* x = b.parameter(Shape(DType::kF32, {8}), "x");
  m->entry()->set_outputs({b.all_reduce(x, ir::ReduceKind::kSum), b.all_reduce(x, ir::ReduceKind::kMean)});
  runtime::CompileOptions options;
  options.collectives = std::make_shared<distribute::InProcessCollectives>(2, 2);
  KILN_EXPECT_ERROR(cuda::lower_to_ptx(*m, 90, options), CompileError,
                    "the cuda backend has no kernel yet for all_reduce (2 replicas over host collectives: GPU replicas "
                    "reduce with NCCL (make_nccl_collectives)) (x2)");
}

// The other collectives lower to NCCL along leading dims only; an inner dim says so before
// the collectives are looked at, a leading one needs NCCL's, and one replica is a copy.
TEST(CudaStrategyTest, CollectivesSayWhatNcclCannotDoWithoutAGpu) {
  auto lower = [](int replicas, auto make) {
    auto m = std::make_unique<ir::Module>("collective");
    ir::Builder b(m->entry());
    m->entry()->set_outputs({make(b, b.parameter(Shape(DType::kF32, {2, 4}), "x"))});
    runtime::CompileOptions options;
    if (replicas > 1) options.collectives = std::make_shared<distribute::InProcessCollectives>(replicas, replicas);
    return cuda::lower_to_ptx(*m, 90, options);
  };
  KILN_EXPECT_ERROR(lower(2, [](ir::Builder& b, ir::Instruction* x) { return b.all_gather(x, 1, 2); }), CompileError,
                    "NCCL gathers along the leading dims only, and dim 1 of f32[2,4] has 2 elements before it");
  KILN_EXPECT_ERROR(lower(2, [](ir::Builder& b, ir::Instruction* x) { return b.all_to_all(x, 1, 0, 2); }), CompileError,
                    "NCCL's all_to_all moves contiguous blocks");
  KILN_EXPECT_ERROR(lower(2, [](ir::Builder& b, ir::Instruction* x) { return b.reduce_scatter(x, ir::ReduceKind::kSum, 0, 2); }),
                    CompileError, "2 replicas over host collectives");
  KILN_EXPECT_ERROR(lower(4, [](ir::Builder& b, ir::Instruction* x) { return b.collective_permute(x, {{0, 1}}, 2); }),
                    CompileError, "it was made for 2 replicas in one group, but the step runs on 4");
  EXPECT_NO_THROW(lower(1, [](ir::Builder& b, ir::Instruction* x) { return b.collective_permute(x, {}, 1); }));
}

TEST(CudaStrategyTest, TwoGpusRunTheirOwnStepsAndAllReduceThroughNccl) {
  const runtime::GpuSurvey gpus = runtime::find_gpus();
  if (gpus.gpus.size() < 2)
    GTEST_SKIP() << "no CUDA device: a strategy over GPUs needs 2, this machine has " << gpus.gpus.size()
                 << (gpus.gpus.empty() ? " (" + gpus.none_because + ")" : std::string());
  auto s = std::make_shared<distribute::MirroredStrategy>(std::vector<std::string>{"cuda:0", "cuda:1"});
  EXPECT_EQ(s->devices(), (std::vector<std::string>{"cuda:0", "cuda:1"}));
  Function f("sum_over_gpus", [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{all_reduce(in[0] * 2.0, ir::ReduceKind::kSum), all_reduce(in[0], ir::ReduceKind::kMean)};
  });
  distribute::PerReplica<HostTensor> inputs;
  inputs.values = {HostTensor::from_vector<float>({3}, {1, 2, 3}), HostTensor::from_vector<float>({3}, {10, 20, 30})};
  for (int repeat = 0; repeat < 2; ++repeat) {
    auto out = s->run([&](const HostTensor& x) { return f({x}); }, inputs);
    for (size_t r = 0; r < 2; ++r) {
      EXPECT_EQ(out[r][0].to_vector<float>(), (std::vector<float>{22, 44, 66})) << "replica " << r;
      EXPECT_EQ(out[r][1].to_vector<float>(), (std::vector<float>{5.5f, 11, 16.5f})) << "replica " << r;
    }
  }
  ASSERT_NE(f.last_executable(), nullptr);
  EXPECT_NE(f.last_executable()->describe().find("all_reduce(nccl, 2 replicas"), std::string::npos)
      << f.last_executable()->describe();
}

}  // namespace
}  // namespace kiln
