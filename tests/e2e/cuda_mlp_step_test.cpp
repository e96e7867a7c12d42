// The seed MLP's whole train step (forward, softmax cross-entropy, backward, Adam) on the GPU:
// without one, every op of the optimized step has a GPU kernel and ptxas accepts its PTX; with
// one, it gives the CPU's losses and weights. Synthetic batches, so the device machine needs
// no MNIST.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "kiln/runtime/backend_registry.h"
#include "kiln/runtime/cuda/cuda_backend.h"
#include "tests/testing/gpu_backend.h"
#include "tests/testing/seed_mlp.h"

namespace kiln {
namespace {

// A batch of 128 random images and labels.
std::pair<HostTensor, HostTensor> random_batch() {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<int32_t> label(0, 9);
  std::vector<float> xv(128 * 784);
  std::vector<int32_t> yv(128);
  for (float& v : xv) v = pixel(rng);
  for (int32_t& v : yv) v = label(rng);
  return {HostTensor::from_vector<float>({128, 784}, xv), HostTensor::from_vector<int32_t>({128}, yv)};
}

// The CPU and cuda backends run the same passes (both accept every op at legality), so the
// CPU's optimized step is the module the cuda backend lowers.
TEST(CudaMlpStepTest, EveryOpOfTheStepHasAGpuKernelAndPtxasAcceptsThem) {
  testing::SeedMlp mlp(runtime::make_backend("cpu"));
  const auto [x, y] = random_batch();
  mlp.train_step(x, y);
  const runtime::Executable* exe = mlp.train_function().last_executable();
  ASSERT_NE(exe, nullptr);
  ASSERT_NE(exe->lowered_module(), nullptr);
  const std::string ptx = cuda::lower_to_ptx(*exe->lowered_module(), 90);
  EXPECT_NE(ptx.find(".entry"), std::string::npos);
  if (!std::filesystem::exists(KILN_CUDA_PTXAS)) GTEST_SKIP() << "no ptxas at " << KILN_CUDA_PTXAS;
  std::string log;
  EXPECT_EQ(testing::ptxas_sm90(KILN_CUDA_PTXAS, ptx, log), 0) << log;
}

TEST(CudaMlpStepTest, ThreeAdamStepsMatchTheCpu) {
  KILN_GPU_BACKEND_OR_SKIP(gpu);
  testing::SeedMlp on_gpu(gpu), on_cpu(runtime::make_backend("cpu"));
  const auto [x, y] = random_batch();
  for (int step = 0; step < 3; ++step) {
    const float a = on_gpu.train_step(x, y), b = on_cpu.train_step(x, y);
    EXPECT_NEAR(a, b, 1e-4f * (1.0f + std::fabs(b))) << "step " << step;
  }
  for (size_t i = 0; i < on_gpu.params().size(); ++i) {
    const std::vector<float> a = on_gpu.params()[i].storage().to_vector<float>();
    const std::vector<float> b = on_cpu.params()[i].storage().to_vector<float>();
    for (size_t j = 0; j < a.size(); ++j) ASSERT_NEAR(a[j], b[j], 1e-4f) << on_gpu.params()[i].name() << "[" << j << "]";
  }
  const runtime::Executable* exe = on_gpu.train_function().last_executable();
  ASSERT_NE(exe, nullptr);
  EXPECT_NE(exe->describe().find("cublasLt"), std::string::npos) << exe->describe();
}

}  // namespace
}  // namespace kiln
