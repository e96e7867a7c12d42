// End to end on trace/: a linear regression trained with kiln::function + GradientTape +
// Variable assignment converges to the weights that generated the data.
#include <gtest/gtest.h>

#include <random>

#include "kiln/runtime/backend_registry.h"
#include "kiln/trace/function.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"

namespace kiln {
namespace {

class TrainingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TrainingTest, LinearRegressionConvergesToTheKnownWeights) {
  const std::vector<float> true_w = {2.0f, -3.0f, 0.5f};
  const float true_b = 1.0f;
  std::mt19937 gen(0);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  HostTensor x(Shape(DType::kF32, {64, 3}));
  HostTensor y(Shape(DType::kF32, {64, 1}));
  for (int i = 0; i < 64; ++i) {
    float t = true_b;
    for (int j = 0; j < 3; ++j) {
      float v = normal(gen);
      x.data<float>()[static_cast<size_t>(i * 3 + j)] = v;
      t += v * true_w[static_cast<size_t>(j)];
    }
    y.data<float>()[static_cast<size_t>(i)] = t;
  }

  Variable w("w", HostTensor(Shape(DType::kF32, {3, 1})));
  Variable b("b", HostTensor(Shape(DType::kF32, {1})));
  Function train_step = function("train_step", [&](const std::vector<Tensor>& in) {
    GradientTape tape;
    Tensor error = matmul(in[0], w) + b - in[1];
    Tensor loss = mean(error * error);
    std::vector<Tensor> grads = tape.gradient(loss, {w, b});
    w.assign_sub(grads[0] * 0.1);
    b.assign_sub(grads[1] * 0.1);
    return loss;
  }, {.backend = runtime::make_backend(GetParam())});

  float first = train_step({x, y})[0].to_vector<float>()[0];
  float last = first;
  for (int step = 0; step < 150; ++step) last = train_step({x, y})[0].to_vector<float>()[0];
  EXPECT_EQ(train_step.trace_count(), 1);
  EXPECT_LT(last, first * 1e-6f);
  std::vector<float> learned = w.storage().to_vector<float>();
  for (size_t j = 0; j < 3; ++j) EXPECT_NEAR(learned[j], true_w[j], 1e-3f);
  EXPECT_NEAR(b.storage().to_vector<float>()[0], true_b, 1e-3f);
  // The whole step is one module: forward, backward (dot_general) and the two updates.
  EXPECT_NE(train_step.last_ir().find("aliases(output 1 -> parameter 2, output 2 -> parameter 3)"),
            std::string::npos) << train_step.last_ir();
}

INSTANTIATE_TEST_SUITE_P(Backends, TrainingTest, ::testing::Values("reference", "cpu"));

}  // namespace
}  // namespace kiln
