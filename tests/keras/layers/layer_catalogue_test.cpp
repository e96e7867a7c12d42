// The issue 20 layers under the mixed_bfloat16 policy: each computes in bf16 (its output is
// bf16) with f32 weights, and agrees with the same layer in f32 to bf16's precision.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "tests/keras/layers/layer_testing.h"

namespace kiln::keras {
namespace {

using kiln::testing::random_f64;
using mixed_precision::Policy;

struct Case {
  const char* name;
  Dims x;
  std::function<LayerHandle(const Policy&)> make;
};

TEST(LayerCatalogueTest, EveryLayerComputesInBfloat16UnderTheMixedPolicy) {
  const Case cases[] = {
      {"Conv1D", {2, 6, 3}, [](const Policy& p) { return LayerHandle(Conv1D(4, 3, {.padding = "causal", .dtype = p})); }},
      {"Conv2DTranspose", {2, 3, 3, 2},
       [](const Policy& p) { return LayerHandle(Conv2DTranspose(3, 3, {.strides = {2, 2}, .padding = "same", .dtype = p})); }},
      {"DepthwiseConv2D", {2, 5, 5, 2},
       [](const Policy& p) { return LayerHandle(DepthwiseConv2D(3, {.depth_multiplier = 2, .dtype = p})); }},
      {"SeparableConv2D", {2, 5, 5, 2}, [](const Policy& p) { return LayerHandle(SeparableConv2D(3, 3, {.dtype = p})); }},
      {"UpSampling2D", {2, 3, 3, 2},
       [](const Policy& p) { return LayerHandle(UpSampling2D(2, {.interpolation = "bilinear", .dtype = p})); }},
      {"ZeroPadding2D", {2, 3, 3, 2}, [](const Policy& p) { return LayerHandle(ZeroPadding2D(1, {.dtype = p})); }},
      {"MaxPooling1D", {2, 6, 3}, [](const Policy& p) { return LayerHandle(MaxPooling1D(2, {.dtype = p})); }},
      {"GlobalMaxPooling2D", {2, 3, 3, 2}, [](const Policy& p) { return LayerHandle(GlobalMaxPooling2D({.dtype = p})); }},
      {"PReLU", {2, 6}, [](const Policy& p) {
         return LayerHandle(PReLU({.alpha_initializer = Initializer("random_uniform", 1), .dtype = p}));
       }},
      {"Softmax", {2, 3, 4}, [](const Policy& p) { return LayerHandle(Softmax(1, {.dtype = p})); }},
      {"LeakyReLU", {2, 6}, [](const Policy& p) { return LayerHandle(LeakyReLU(0.3, {.dtype = p})); }},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    LayerHandle mixed = c.make(Policy("mixed_bfloat16")), full = c.make(Policy("float32"));
    const Dims per_example(c.x.begin() + 1, c.x.end());
    mixed->build(per_example);
    full->build(per_example);
    ASSERT_EQ(mixed->weights().size(), full->weights().size()) << c.name;
    for (size_t i = 0; i < mixed->weights().size(); ++i) {
      EXPECT_EQ(mixed->weights()[i].shape().dtype(), DType::kF32) << c.name;
      mixed->weights()[i].assign(Tensor(full->weights()[i].storage().clone()));
    }
    const HostTensor x = random_f64(c.x, seed++).astype(DType::kF32);
    const Tensor y = (*mixed)(Tensor(x));
    EXPECT_EQ(y.dtype(), DType::kBF16) << c.name;
    const std::vector<float> got = y.to_vector<float>(), want = (*full)(Tensor(x)).to_vector<float>();
    ASSERT_EQ(got.size(), want.size()) << c.name;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.03 * (1 + std::abs(want[i]))) << c.name << " " << i;
  }
}

}  // namespace
}  // namespace kiln::keras
