// MirroredStrategy over two GPUs: each replica traces and compiles the step for its own GPU,
// and the step's all_reduce meets the other replica's through NCCL, on the device. Skips with
// fewer than two GPUs, naming why (scripts/device_check.sh runs it only where two are).
#include <gtest/gtest.h>

#include "kiln/distribute/strategy.h"
#include "kiln/runtime/gpus.h"
#include "kiln/trace/function.h"
#include "kiln/trace/ops/elementwise.h"

namespace kiln {
namespace {

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
