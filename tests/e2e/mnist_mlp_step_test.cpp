// The seed MLP's whole train step (trace/ + CPU backend) trains on real MNIST.
#include <gtest/gtest.h>

#include "kiln/runtime/backend_registry.h"
#include "tests/testing/seed_mlp.h"

namespace kiln {
namespace {

TEST(MnistMlpStepTest, FiveEpochsReachNinetySevenPercentTestAccuracy) {
  testing::MnistF32 data = testing::load_mnist_f32();
  testing::SeedMlp mlp(runtime::default_backend());
  HostTensor x0 = data.x_train.slice_rows(0, 128).clone(), y0 = data.y_train.slice_rows(0, 128).clone();
  const float first_loss = mlp.train_step(x0, y0);
  EXPECT_NEAR(first_loss, std::log(10.0f), 0.5f);  // about uniform predictions at the start
  testing::train_epochs(mlp, data, 5);
  const double acc = mlp.accuracy(data.x_test, data.y_test);
  EXPECT_GE(acc, 0.97) << "test accuracy after 5 epochs";
  EXPECT_EQ(mlp.train_function().trace_count(), 1);
}

// Fusion target of issue 3: matmul+bias(+relu) one call each, the softmax cross-entropy and
// its gradient in shared launches, the Adam updates of all parameters in shared launches.
TEST(MnistMlpStepTest, WholeStepRunsInAtMostTwelveKernelLaunches) {
  testing::MnistF32 data = testing::load_mnist_f32();
  testing::SeedMlp mlp(runtime::make_backend("cpu"));
  mlp.train_step(data.x_train.slice_rows(0, 128).clone(), data.y_train.slice_rows(0, 128).clone());
  const runtime::Executable* exe = mlp.train_function().last_executable();
  ASSERT_NE(exe, nullptr);
  EXPECT_LE(exe->kernel_count(), 12) << exe->describe();
  EXPECT_NE(exe->describe().find("matmul+bias"), std::string::npos) << exe->describe();
}

TEST(MnistMlpStepTest, CpuStepMatchesTheReferenceBackend) {
  testing::MnistF32 data = testing::load_mnist_f32();
  testing::SeedMlp cpu(runtime::make_backend("cpu")), ref(runtime::make_backend("reference"));
  HostTensor x = data.x_train.slice_rows(0, 128).clone(), y = data.y_train.slice_rows(0, 128).clone();
  for (int step = 0; step < 3; ++step) {
    float a = cpu.train_step(x, y), b = ref.train_step(x, y);
    EXPECT_NEAR(a, b, 1e-4f * (1.0f + std::fabs(b))) << "step " << step;
  }
  for (size_t i = 0; i < cpu.params().size(); ++i) {
    auto a = cpu.params()[i].storage().to_vector<float>();
    auto b = ref.params()[i].storage().to_vector<float>();
    for (size_t j = 0; j < a.size(); ++j) ASSERT_NEAR(a[j], b[j], 1e-4f) << cpu.params()[i].name() << "[" << j << "]";
  }
}

}  // namespace
}  // namespace kiln
