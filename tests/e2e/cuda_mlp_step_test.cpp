// The seed MLP's whole train step (forward, softmax cross-entropy, backward, Adam) on the GPU:
// without one, every op of the optimized step has a GPU kernel and ptxas accepts its PTX; with
// one, it gives the CPU's losses and weights. Synthetic batches, so the device machine needs
// no MNIST.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/data/dataset.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/trace/device_iterator.h"
#include "tests/testing/gpu_step.h"
#include "tests/testing/seed_mlp.h"

namespace kiln {
namespace {

// The CPU and cuda backends run the same passes (both accept every op at legality), so the
// CPU's optimized step is the module the cuda backend lowers.
TEST(CudaMlpStepTest, EveryOpOfTheStepHasAGpuKernelAndPtxasAcceptsThem) {
  testing::SeedMlp mlp(runtime::make_backend("cpu"));
  const auto [x, y] = testing::random_image_batch({128, 784}, 5);
  mlp.train_step(x, y);
  testing::expect_step_lowers_for_sm90(mlp.train_function().last_executable(), KILN_CUDA_PTXAS);
}

TEST(CudaMlpStepTest, ThreeAdamStepsMatchTheCpu) {
  KILN_GPU_BACKEND_OR_SKIP(gpu);
  testing::SeedMlp on_gpu(gpu), on_cpu(runtime::make_backend("cpu"));
  const auto [x, y] = testing::random_image_batch({128, 784}, 5);
  for (int step = 0; step < 3; ++step) {
    const float a = on_gpu.train_step(x, y), b = on_cpu.train_step(x, y);
    EXPECT_NEAR(a, b, 1e-4f * (1.0f + std::fabs(b))) << "step " << step;
  }
  testing::expect_same_variables(on_gpu.params(), on_cpu.params(), 1e-4f);
  const runtime::Executable* exe = on_gpu.train_function().last_executable();
  ASSERT_NE(exe, nullptr);
  EXPECT_NE(exe->describe().find("cublasLt"), std::string::npos) << exe->describe();
}

// prefetch_to_device on the GPU: each batch's copy is queued on the transfer stream two
// batches ahead, so it runs while earlier steps run on the compute stream; the steps must see
// exactly the batches the host hands in (the same kernels, so the same losses bit for bit).
TEST(CudaMlpStepTest, PrefetchedBatchesGiveTheStepsOfHostFedBatches) {
  KILN_GPU_BACKEND_OR_SKIP(gpu);
  const auto [x, y] = testing::random_image_batch({640, 784}, 9);
  const data::Dataset batches = data::Dataset::from_tensor_slices({x, y}).batch(128);
  testing::SeedMlp prefetched(gpu), host_fed(gpu);
  trace::DeviceIterator on_device(batches.prefetch_to_device(gpu->device()));
  data::Iterator on_host = batches.iterator();
  int steps = 0;
  while (std::optional<trace::DeviceBatch> b = on_device.next()) {
    std::optional<data::Element> h = on_host.next();
    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(prefetched.train_step_on_device(b->replicas[0]), host_fed.train_step((*h)[0], (*h)[1])) << "step " << steps;
    ++steps;
  }
  EXPECT_EQ(steps, 5);
  EXPECT_FALSE(on_host.next().has_value());
  testing::expect_same_variables(prefetched.params(), host_fed.params(), 0.0f);
}

}  // namespace
}  // namespace kiln
