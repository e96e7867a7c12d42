// The seed MLP's whole train step written as a Keras mixed_bfloat16 policy makes it (bf16
// activations and matmuls, f32 variables, loss and optimizer: tests/testing/compute_cast.h)
// trains on real MNIST as well as the float32 step (issue 16: within 0.3 percentage points).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "kiln/runtime/backend_registry.h"
#include "tests/testing/seed_mlp.h"

namespace kiln {
namespace {

TEST(MixedPrecisionStepTest, SeedMlpUnderBf16ReachesF32TestAccuracyWithinPointThreePercent) {
  testing::MnistF32 data = testing::load_mnist_f32();
  double accuracy[2];
  for (int k = 0; k < 2; ++k) {
    testing::SeedMlp mlp(runtime::default_backend(), 0, k == 0 ? DType::kF32 : DType::kBF16);
    testing::train_epochs(mlp, data, 5);
    accuracy[k] = mlp.accuracy(data.x_test, data.y_test);
    EXPECT_EQ(mlp.train_function().last_executable()->reference_fallbacks().size(), 0u);
  }
  std::printf("test accuracy after 5 epochs: float32 %.4f, mixed_bfloat16 %.4f\n", accuracy[0], accuracy[1]);
  EXPECT_GE(accuracy[1], 0.97);
  EXPECT_LE(std::fabs(accuracy[1] - accuracy[0]), 0.003);
}

}  // namespace
}  // namespace kiln
