// The Keras MNIST convnet's whole train step (two convolutions with bias and relu, max
// pooling, dropout, dense, softmax cross-entropy, their gradients, Adam) on the GPU: without
// one, every op of the optimized step lowers (cuDNN convolutions and pooling, cuBLASLt, loop
// kernels) and ptxas accepts the PTX; with one, it gives the CPU's losses and weights.
// Synthetic batches, so the device machine needs no MNIST.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/runtime/backend_registry.h"
#include "tests/testing/gpu_step.h"
#include "tests/testing/seed_cnn.h"

namespace kiln {
namespace {

// As the MLP's: both backends run the same passes, so the CPU's optimized step is the module
// the cuda backend lowers.
TEST(CudaCnnStepTest, EveryOpOfTheStepHasAGpuKernelAndPtxasAcceptsThem) {
  testing::SeedCnn cnn(runtime::make_backend("cpu"));
  const auto [x, y] = testing::random_image_batch({64, 28, 28, 1}, 11);
  cnn.train_step(x, y, 0);
  testing::expect_step_lowers_for_sm90(cnn.train_function().last_executable(), KILN_CUDA_PTXAS);
}

// The mixed-precision step (bf16 compute, f32 variables): bf16 convolutions and pooling on
// cuDNN, the casts as loop kernels.
TEST(CudaCnnStepTest, EveryOpOfTheBf16StepHasAGpuKernelAndPtxasAcceptsThem) {
  testing::SeedCnn cnn(runtime::make_backend("cpu"), 0, DType::kBF16);
  const auto [x, y] = testing::random_image_batch({64, 28, 28, 1}, 11);
  cnn.train_step(x, y, 0);
  testing::expect_step_lowers_for_sm90(cnn.train_function().last_executable(), KILN_CUDA_PTXAS);
}

TEST(CudaCnnStepTest, ThreeAdamStepsMatchTheCpu) {
  KILN_GPU_BACKEND_OR_SKIP(gpu);
  testing::SeedCnn on_gpu(gpu), on_cpu(runtime::make_backend("cpu"));
  const auto [x, y] = testing::random_image_batch({64, 28, 28, 1}, 11);
  for (int step = 0; step < 3; ++step) {
    const float a = on_gpu.train_step(x, y, step), b = on_cpu.train_step(x, y, step);
    EXPECT_NEAR(a, b, 1e-4f * (1.0f + std::fabs(b))) << "step " << step;
  }
  testing::expect_same_variables(on_gpu.params(), on_cpu.params(), 1e-4f);
  const runtime::Executable* exe = on_gpu.train_function().last_executable();
  ASSERT_NE(exe, nullptr);
  EXPECT_NE(exe->describe().find("convolution(cudnn"), std::string::npos) << exe->describe();
  EXPECT_NE(exe->describe().find("max_pool(cudnn"), std::string::npos) << exe->describe();
}

}  // namespace
}  // namespace kiln
