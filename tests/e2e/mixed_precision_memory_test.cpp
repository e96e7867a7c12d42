// Planned memory of whole train steps written as a Keras mixed_bfloat16 policy makes them
// (explicit casts, tests/testing/compute_cast.h) against float32: bf16 activations are planned
// at 2 bytes and no f32 copy of them appears around matmuls and convolutions. Bytes, not time
// (issue 16).
#include <gtest/gtest.h>

#include <cstdio>

#include "kiln/runtime/backend_registry.h"
#include "tests/testing/seed_cnn.h"
#include "tests/testing/seed_mlp.h"

namespace kiln::testing {
namespace {

struct Planned {
  int64_t activations = 0, peak = 0;
  std::string steps;
};

Planned planned(const Function& f) {
  const runtime::Executable* exe = f.last_executable();
  return {exe->planned_activation_bytes(), exe->planned_peak_bytes(), exe->describe()};
}

Planned mlp_step(DType compute, const std::vector<int64_t>& widths, int64_t batch) {
  SeedMlp mlp(runtime::default_backend(), 0, compute, widths);
  HostTensor x(Shape(DType::kF32, {batch, widths[0]})), y(Shape(DType::kI32, {batch}));
  mlp.train_step(x, y);
  return planned(mlp.train_function());
}

Planned cnn_step(DType compute) {
  SeedCnn cnn(runtime::default_backend(), 0, compute);
  HostTensor x(Shape(DType::kF32, {128, 28, 28, 1})), y(Shape(DType::kI32, {128}));
  cnn.train_step(x, y, 0);
  return planned(cnn.train_function());
}

void expect_at_most(const Planned& bf16, const Planned& f32, double ratio, const char* what) {
  const double r = static_cast<double>(bf16.activations) / static_cast<double>(f32.activations);
  std::printf("%s: activations f32 %ld bf16 %ld (%.3f); peak f32 %ld bf16 %ld\n", what,
              static_cast<long>(f32.activations), static_cast<long>(bf16.activations), r, static_cast<long>(f32.peak),
              static_cast<long>(bf16.peak));
  EXPECT_LE(r, ratio) << what << "\n" << bf16.steps;
  EXPECT_LT(bf16.peak, f32.peak) << what;
  EXPECT_EQ(bf16.steps.find("reference"), std::string::npos) << what << ": a step fell back\n" << bf16.steps;
}

TEST(MixedPrecisionMemoryTest, Bf16StepsPlanAtMost60PercentOfF32Activations) {
  expect_at_most(cnn_step(DType::kBF16), cnn_step(DType::kF32), 0.6, "convnet (W2, batch 128)");
  expect_at_most(mlp_step(DType::kBF16, {784, 1024, 1024, 10}, 512), mlp_step(DType::kF32, {784, 1024, 1024, 10}, 512),
                 0.6, "wide MLP (W3, batch 512)");
}

// The seed MLP's activations are small next to its f32 weights, gradients and Adam slots, so
// only the activations are compared: a mixed step never plans more than the f32 one.
TEST(MixedPrecisionMemoryTest, SeedMlpUnderBf16PlansLessThanF32) {
  const Planned f = mlp_step(DType::kF32, {784, 128, 10}, 128), b = mlp_step(DType::kBF16, {784, 128, 10}, 128);
  std::printf("seed MLP: activations f32 %ld bf16 %ld; peak f32 %ld bf16 %ld\n", static_cast<long>(f.activations),
              static_cast<long>(b.activations), static_cast<long>(f.peak), static_cast<long>(b.peak));
  EXPECT_LT(b.activations, f.activations) << b.steps;
  EXPECT_LE(b.peak, f.peak) << b.steps;
}

}  // namespace
}  // namespace kiln::testing
