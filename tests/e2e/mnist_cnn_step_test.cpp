// The Keras MNIST convnet (W2) written on trace/ trains on real MNIST with the CPU backend's
// oneDNN convolution and pooling kernels. Measured: 98.27% after 2 epochs (batch 128, Adam
// 1e-3); issue 8 asks 98.8% of the Keras example, so this bar guards training, not that goal.
#include <gtest/gtest.h>

#include "kiln/runtime/backend_registry.h"
#include "tests/testing/seed_cnn.h"

namespace kiln {
namespace {

TEST(MnistCnnStepTest, TwoEpochsReachNinetyEightPercent) {
  testing::MnistF32 data = testing::load_mnist_f32();
  HostTensor x_test = data.x_test.reshape({10000, 28, 28, 1});
  testing::SeedCnn cnn(runtime::default_backend());
  testing::train_epochs(cnn, data, 2);
  EXPECT_GE(cnn.accuracy(x_test, data.y_test), 0.98);
}

}  // namespace
}  // namespace kiln
