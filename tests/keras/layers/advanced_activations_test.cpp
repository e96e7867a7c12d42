// ReLU, LeakyReLU, PReLU and Softmax layers: values by hand, f64 gradients (PReLU's alpha
// too), Keras 2's and Keras 3's LeakyReLU configs, and a saved model with PReLU's weight
// under Keras's name.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/keras/layers/layer_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using kiln::testing::random_f64;
using testing::check_layer_gradients;
using testing::f64_grad_options;

Tensor row(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<float>({1, n}, std::move(v));
}

TEST(ReLUTest, AppliesMaxValueSlopeAndThreshold) {
  EXPECT_EQ(ReLU()(row({-2, 0.5, 3})).to_vector<float>(), (std::vector<float>{0, 0.5, 3}));
  ReLU capped({.max_value = 2.0, .negative_slope = 0.5, .threshold = 1.0});
  // x < 1: 0.5 (x - 1); 1 <= x < 2: x; x >= 2: 2
  EXPECT_EQ(capped(row({-1, 0.5, 1.5, 7})).to_vector<float>(), (std::vector<float>{-1, -0.25, 1.5, 2}));
  KILN_EXPECT_ERROR(ReLU({.max_value = -1.0}), ValueError, "[ReLU] max_value must be >= 0");
}

TEST(LeakyReLUTest, DefaultSlopeIsKerassLayerDefault) {
  EXPECT_EQ(LeakyReLU()(row({-10, 4})).to_vector<float>(), (std::vector<float>{-3, 4}));
  EXPECT_EQ(LeakyReLU(0.5)(row({-4, 2})).to_vector<float>(), (std::vector<float>{-2, 2}));
}

TEST(PReLUTest, LearnsOneSlopePerUnitOrPerSharedAxis) {
  PReLU p({.shared_axes = {1, 2}});
  p.build(Dims{2, 2, 3});
  EXPECT_EQ(p.alpha().shape(), Shape(DType::kF32, {1, 1, 3}));
  EXPECT_EQ(p.alpha().name(), "p_re_lu/alpha");
  p.alpha().assign(Tensor::from_vector<float>({1, 1, 3}, {0.1f, 0.5f, 2}));
  const std::vector<float> got = p(Tensor(HostTensor::from_vector<float>({1, 2, 2, 3}, {-1, -1, -1, 1, 1, 1, -2, 3, -4, 0, 0, 0})))
                                     .to_vector<float>();
  const std::vector<float> want = {-0.1f, -0.5f, -2, 1, 1, 1, -0.2f, 3, -8, 0, 0, 0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  PReLU full;
  full.build(Dims{4, 2});
  EXPECT_EQ(full.alpha().shape(), Shape(DType::kF32, {4, 2}));
  PReLU bad({.shared_axes = {3}, .name = "bad"});
  KILN_EXPECT_ERROR(bad.build(Dims{4, 2}), ValueError, "[bad] shared_axes=[3] must name axes 1..2");
}

TEST(SoftmaxTest, NormalizesAlongTheAxis) {
  const std::vector<float> last = Softmax()(row({0, std::log(3.0f)})).to_vector<float>();
  EXPECT_NEAR(last[0], 0.25, 1e-6);
  EXPECT_NEAR(last[1], 0.75, 1e-6);
  // axis 1 of (1, 2, 2): columns normalize.
  const std::vector<float> col =
      Softmax(1)(Tensor(HostTensor::from_vector<float>({1, 2, 2}, {0, 5, std::log(3.0f), 5}))).to_vector<float>();
  EXPECT_NEAR(col[0], 0.25, 1e-6);
  EXPECT_NEAR(col[2], 0.75, 1e-6);
  EXPECT_NEAR(col[1], 0.5, 1e-6);
  Softmax batch_axis(0, {.name = "sm"});
  KILN_EXPECT_ERROR(batch_axis(row({1, 2})), ValueError, "[sm] axis=0 is out of range");
}

TEST(AdvancedActivationsTest, GradientsMatchF64FiniteDifferences) {
  // Inputs away from the kinks (0, threshold 0.5, max_value 1.5).
  HostTensor x = random_f64({2, 3, 4}, 1, -3, 3);
  for (double& v : x.data<double>())
    for (double kink : {0.0, 0.5, 1.5})
      if (std::abs(v - kink) < 0.05) v += 0.1;
  ReLU relu({.max_value = 1.5, .negative_slope = 0.2, .threshold = 0.5, .dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(relu, x, false, f64_grad_options()));
  LeakyReLU leaky(0.3, {.dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(leaky, x, false, f64_grad_options()));
  PReLU prelu({.alpha_initializer = Initializer("random_uniform", 3), .shared_axes = {1}, .dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(prelu, x, false, f64_grad_options()));  // d/dx and d/dalpha
  Softmax middle(1, {.dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(middle, x, false, f64_grad_options()));
  Softmax last(-1, {.dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(last, x, false, f64_grad_options()));
}

TEST(AdvancedActivationsTest, ConfigsReadKeras2AndKeras3Forms) {
  LeakyReLU leaky(0.1);
  leaky.set_name("leaky_re_lu");
  EXPECT_EQ(leaky.get_config(), R"({"alpha":0.1,"dtype":"float32","name":"leaky_re_lu","trainable":true})");
  // Keras 3 writes negative_slope (and a DTypePolicy object); Keras 2 alpha; absent is 0.3.
  const char* keras3 = R"({"name": "lr", "trainable": true, "negative_slope": 0.25, "dtype": {"module": "keras",
      "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}})";
  EXPECT_EQ(layer_from_config("LeakyReLU", keras3)->operator()(row({-4})).to_vector<float>(), (std::vector<float>{-1}));
  EXPECT_EQ(layer_from_config("LeakyReLU", R"({"alpha": 0.5})")->operator()(row({-4})).to_vector<float>(),
            (std::vector<float>{-2}));
  EXPECT_EQ(layer_from_config("LeakyReLU", "{}")->operator()(row({-10})).to_vector<float>(), (std::vector<float>{-3}));
  // Keras 3's PReLU names its initializer with module and registered_name.
  LayerHandle prelu = layer_from_config("PReLU", R"({"alpha_initializer": {"module": "keras.initializers",
      "class_name": "Constant", "config": {"value": 0.5}, "registered_name": null}, "shared_axes": null})");
  EXPECT_EQ(prelu->operator()(row({-4, 4})).to_vector<float>(), (std::vector<float>{-2, 4}));
  for (const LayerHandle& l : std::vector<LayerHandle>{
           ReLU({.max_value = 6.0, .negative_slope = 0.1}), ReLU(), leaky, Softmax(1),
           PReLU({.alpha_initializer = Initializer("constant"), .shared_axes = {1, 2}})})
    testing::expect_config_round_trip(*l);
}

}  // namespace
}  // namespace kiln::keras
