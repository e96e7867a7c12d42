// The examples' whole train steps with generated loop kernels (LLVM) against the register
// interpreter: every fused kernel of the seed MLP's and the convnet's steps must give the
// interpreter's results, so after several steps the losses and every weight are bit-identical.
#include <gtest/gtest.h>

#include <cstring>

#include "kiln/runtime/cpu/cpu_backend.h"
#include "kiln/runtime/cpu/loop_kernel.h"
#include "tests/testing/seed_cnn.h"
#include "tests/testing/seed_mlp.h"

namespace kiln {
namespace {

using cpu::LoopEngine;

std::shared_ptr<runtime::Backend> backend(LoopEngine engine, bool horizontal_fusion = true) {
  return cpu::make_cpu_backend(0, engine, horizontal_fusion);
}

void expect_same_weights(const std::vector<Variable>& a, const std::vector<Variable>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const HostTensor& x = a[i].storage();
    const HostTensor& y = b[i].storage();
    EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), static_cast<size_t>(x.byte_size())), 0) << a[i].name();
  }
}

TEST(CodegenStepTest, SeedMlpStepsAreBitIdenticalToTheInterpreter) {
  testing::MnistF32 data = testing::load_mnist_f32();
  testing::SeedMlp generated(backend(LoopEngine::kGenerated)), interpreted(backend(LoopEngine::kInterpreter));
  for (int step = 0; step < 6; ++step) {
    HostTensor x = data.x_train.slice_rows(128 * step, 128 * (step + 1)).clone();
    HostTensor y = data.y_train.slice_rows(128 * step, 128 * (step + 1)).clone();
    const float a = generated.train_step(x, y), b = interpreted.train_step(x, y);
    EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << "step " << step << ": " << a << " vs " << b;
  }
  expect_same_weights(generated.params(), interpreted.params());
}

TEST(CodegenStepTest, ConvnetStepsAreBitIdenticalToTheInterpreter) {
  testing::MnistF32 data = testing::load_mnist_f32();
  testing::SeedCnn generated(backend(LoopEngine::kGenerated)), interpreted(backend(LoopEngine::kInterpreter));
  for (int step = 0; step < 3; ++step) {
    HostTensor x = data.x_train.slice_rows(64 * step, 64 * (step + 1)).clone().reshape({64, 28, 28, 1});
    HostTensor y = data.y_train.slice_rows(64 * step, 64 * (step + 1)).clone();
    const float a = generated.train_step(x, y, step), b = interpreted.train_step(x, y, step);
    EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << "step " << step << ": " << a << " vs " << b;
  }
  expect_same_weights(generated.params(), interpreted.params());
}

// Horizontal fusion (runtime/cpu/loop_grouping.h) merges each variable's Adam updates into one
// kernel; values pass in registers instead of memory, and the results must not change a bit.
TEST(CodegenStepTest, HorizontalFusionKeepsTheSeedMlpStepBitIdentical) {
  testing::MnistF32 data = testing::load_mnist_f32();
  for (LoopEngine engine : {LoopEngine::kGenerated, LoopEngine::kInterpreter}) {
    testing::SeedMlp grouped(backend(engine)), separate(backend(engine, false));
    for (int step = 0; step < 4; ++step) {
      HostTensor x = data.x_train.slice_rows(128 * step, 128 * (step + 1)).clone();
      HostTensor y = data.y_train.slice_rows(128 * step, 128 * (step + 1)).clone();
      const float a = grouped.train_step(x, y), b = separate.train_step(x, y);
      EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << "step " << step << ": " << a << " vs " << b;
    }
    expect_same_weights(grouped.params(), separate.params());
    // Each of the four variables' m, v and parameter updates run as one kernel.
    auto triples = [](const testing::SeedMlp& m) {
      const std::string text = m.train_function().last_executable()->describe();
      int n = 0;
      for (size_t at = text.find("fusion(loop x3"); at != std::string::npos; at = text.find("fusion(loop x3", at + 1)) ++n;
      return n;
    };
    EXPECT_GE(triples(grouped), 4) << grouped.train_function().last_executable()->describe();
    EXPECT_EQ(triples(separate), 0);
  }
}

}  // namespace
}  // namespace kiln
