// NCCL all_reduce among the GPUs of one process (MirroredStrategy's replicas on GPUs): with two
// GPUs or more, programs on cuda:0 and cuda:1 reduce device buffers (sum and mean, f32 and
// bf16) and host values reduce through the GPUs; with fewer they skip, naming why. NCCL's
// loading and the errors without GPUs are checked here (host collectives of several replicas:
// tests/e2e/cuda_strategy_test.cpp).
#include <gtest/gtest.h>

#include <thread>

#include "kiln/ir/builder.h"
#include "kiln/runtime/cuda/cuda_backend.h"
#include "kiln/runtime/cuda/nccl_collectives.h"
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
    const std::vector<double> a = x[0].to_vector<double>(), b = x[1].to_vector<double>();
    const double tol = t == DType::kF32 ? 1e-6 : 1e-2;
    for (size_t r = 0; r < 2; ++r) {
      EXPECT_NE(steps[r].find("all_reduce(nccl, 2 replicas"), std::string::npos) << steps[r];
      ASSERT_EQ(out[r].size(), 2u);
      const std::vector<double> sum = out[r][0].to_vector<double>(), mean = out[r][1].to_vector<double>();
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_NEAR(sum[i], a[i] + b[i], tol * (1 + std::fabs(a[i] + b[i]))) << name(t) << " replica " << r << " [" << i << "]";
        ASSERT_NEAR(mean[i], (a[i] + b[i]) / 2, tol * (1 + std::fabs(a[i] + b[i]))) << name(t) << " replica " << r;
      }
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

}  // namespace
}  // namespace kiln::cuda
