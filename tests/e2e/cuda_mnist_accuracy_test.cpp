// The seed MLP and the Keras convnet trained on real MNIST on the GPU reach the accuracy bars
// their CPU tests hold (mnist_mlp_step_test.cpp: 97% after 5 epochs; mnist_cnn_step_test.cpp:
// 98% after 2 epochs), with the same recipe: batch 128, Adam, the same seeds and shuffles.
// Without a GPU each skips ("no CUDA device: ..."). On the device machine the MNIST files come
// in device_bin.tar.xz and scripts/device_check.sh points KILN_DATA at them.
#include <gtest/gtest.h>

#include "tests/testing/gpu_backend.h"
#include "tests/testing/seed_cnn.h"
#include "tests/testing/seed_mlp.h"

namespace kiln {
namespace {

TEST(CudaMnistAccuracyTest, SeedMlpFiveEpochsReachNinetySevenPercent) {
  KILN_GPU_BACKEND_OR_SKIP(gpu);
  testing::MnistF32 data = testing::load_mnist_f32();
  testing::SeedMlp mlp(gpu);
  testing::train_epochs(mlp, data, 5);
  EXPECT_GE(mlp.accuracy(data.x_test, data.y_test), 0.97) << "test accuracy after 5 epochs on " << gpu->device().name();
  const runtime::Executable* exe = mlp.train_function().last_executable();
  ASSERT_NE(exe, nullptr);
  EXPECT_NE(exe->describe().find("cublasLt"), std::string::npos) << exe->describe();
}

TEST(CudaMnistAccuracyTest, ConvnetTwoEpochsReachNinetyEightPercent) {
  KILN_GPU_BACKEND_OR_SKIP(gpu);
  testing::MnistF32 data = testing::load_mnist_f32();
  testing::SeedCnn cnn(gpu);
  testing::train_epochs(cnn, data, 2);
  EXPECT_GE(cnn.accuracy(data.x_test.reshape({10000, 28, 28, 1}), data.y_test), 0.98)
      << "test accuracy after 2 epochs on " << gpu->device().name();
  const runtime::Executable* exe = cnn.train_function().last_executable();
  ASSERT_NE(exe, nullptr);
  EXPECT_NE(exe->describe().find("convolution(cudnn"), std::string::npos) << exe->describe();
}

}  // namespace
}  // namespace kiln
