// DepthwiseConv2D and SeparableConv2D: values against a direct per-channel loop (TensorFlow's
// output channel order c * depth_multiplier + m), f64 gradients of the whole layers, configs
// in Keras's depthwise_/pointwise_ names, errors naming the layer, and saved models whose .h5
// lists depthwise_kernel, pointwise_kernel and bias.
#include <gtest/gtest.h>

#include "tests/keras/layers/layer_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using kiln::testing::random_f64;
using testing::check_layer_gradients;
using testing::f64_grad_options;

// y[n, i, j, c * M + m] = sum_a,e x[n, i*s + a*d - top, j*s + e*d - left, c] w[a, e, c, m]
// (no bias), zero outside the input.
std::vector<double> depthwise_loop(const HostTensor& x, const HostTensor& w, const Dims& out, const Dims& s,
                                   const Dims& top_left) {
  const int64_t n = x.dims()[0], h = x.dims()[1], wd = x.dims()[2], c = x.dims()[3];
  const int64_t kh = w.dims()[0], kw = w.dims()[1], m = w.dims()[3];
  const std::vector<float> xs = x.to_vector<float>(), ws = w.to_vector<float>();
  std::vector<double> y;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < out[0]; ++i)
      for (int64_t j = 0; j < out[1]; ++j)
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t k = 0; k < m; ++k) {
            double acc = 0;
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t e = 0; e < kw; ++e) {
                const int64_t r = i * s[0] + a - top_left[0], q = j * s[1] + e - top_left[1];
                if (r < 0 || r >= h || q < 0 || q >= wd) continue;
                acc += double(xs[static_cast<size_t>(((b * h + r) * wd + q) * c + ch)]) *
                       ws[static_cast<size_t>(((a * kw + e) * c + ch) * m + k)];
              }
            y.push_back(acc);
          }
  return y;
}

TEST(DepthwiseConv2DTest, MatchesAPerChannelLoop) {
  const HostTensor x = random_f64({2, 5, 4, 3}, 1).astype(DType::kF32);
  // valid stride 1, and "same" stride 2 (TensorFlow pads rows 0/1: total = (3 - 1) * 2 + 3 - 5).
  for (const char* padding : {"valid", "same"}) {
    const bool same = std::string(padding) == "same";
    DepthwiseConv2D layer({3, 2}, {.strides = same ? Dims{2, 2} : Dims{1, 1}, .padding = padding, .depth_multiplier = 2,
                                   .depthwise_initializer = Initializer("random_uniform", 2),
                                   .bias_initializer = Initializer("random_uniform", 3)});
    const std::vector<float> got = layer(Tensor(x)).to_vector<float>();
    const Dims out = layer.compute_output_shape({5, 4, 3});
    EXPECT_EQ(out, same ? (Dims{3, 2, 6}) : (Dims{3, 3, 6}));
    const std::vector<double> want = depthwise_loop(x, layer.depthwise_kernel().storage(), out,
                                                    same ? Dims{2, 2} : Dims{1, 1}, same ? Dims{1, 0} : Dims{0, 0});
    const std::vector<float> bias = layer.bias().storage().to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i] + bias[i % 6], 1e-5) << padding << " " << i;
  }
  // Channel c's outputs are c * M + m: with a ones kernel both copies of channel 0 come first.
  DepthwiseConv2D ones(1, {.depth_multiplier = 2, .use_bias = false, .depthwise_initializer = "ones"});
  EXPECT_EQ(ones(Tensor(testing::ramp({1, 1, 1, 2}))).to_vector<float>(), (std::vector<float>{1, 1, 2, 2}));
  EXPECT_EQ(ones.depthwise_kernel().shape(), Shape(DType::kF32, {1, 1, 2, 2}));
}

TEST(SeparableConv2DTest, IsDepthwiseThenPointwise) {
  const HostTensor x = random_f64({2, 5, 5, 2}, 4).astype(DType::kF32);
  SeparableConv2D layer(3, 3, {.padding = "same", .depth_multiplier = 2,
                               .depthwise_initializer = Initializer("random_uniform", 5),
                               .pointwise_initializer = Initializer("random_uniform", 6),
                               .bias_initializer = Initializer("random_uniform", 7)});
  const std::vector<float> got = layer(Tensor(x)).to_vector<float>();
  EXPECT_EQ(layer.pointwise_kernel().shape(), Shape(DType::kF32, {1, 1, 4, 3}));
  const std::vector<double> mid = depthwise_loop(x, layer.depthwise_kernel().storage(), {5, 5}, {1, 1}, {1, 1});
  const std::vector<float> p = layer.pointwise_kernel().storage().to_vector<float>(), b = layer.bias().storage().to_vector<float>();
  ASSERT_EQ(got.size(), mid.size() / 4 * 3);
  for (size_t pixel = 0; pixel < mid.size() / 4; ++pixel)
    for (size_t f = 0; f < 3; ++f) {
      double want = b[f];
      for (size_t k = 0; k < 4; ++k) want += mid[pixel * 4 + k] * p[k * 3 + f];
      EXPECT_NEAR(got[pixel * 3 + f], want, 1e-5) << pixel << " " << f;
    }
}

TEST(DepthwiseConv2DTest, GradientsMatchF64FiniteDifferences) {
  DepthwiseConv2D depthwise({2, 3}, {.strides = {2, 1}, .padding = "same", .depth_multiplier = 2, .activation = "tanh",
                                     .bias_initializer = Initializer("random_uniform", 1), .dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(depthwise, random_f64({2, 4, 4, 2}, 2), false, f64_grad_options()));
  DepthwiseConv2D first(2, {.data_format = "channels_first", .dilation_rate = {1, 2}, .dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(first, random_f64({1, 3, 4, 5}, 3), false, f64_grad_options()));
  SeparableConv2D separable(3, {3, 2}, {.strides = {1, 2}, .padding = "same", .depth_multiplier = 2,
                                        .activation = "sigmoid", .bias_initializer = Initializer("random_uniform", 4),
                                        .dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(separable, random_f64({2, 4, 4, 2}, 5), false, f64_grad_options()));
}

TEST(DepthwiseConv2DTest, ConfigsUseKerasNamesAndRoundTrip) {
  DepthwiseConv2D depthwise(3, {.depth_multiplier = 2});
  depthwise.set_name("depthwise_conv2d");
  const std::string config = depthwise.get_config();
  for (const char* part : {R"("depth_multiplier":2)", R"("depthwise_initializer":{"class_name":"GlorotUniform")",
                           R"("depthwise_regularizer":null)", R"("depthwise_constraint":null)", R"("kernel_size":[3,3])"})
    EXPECT_NE(config.find(part), std::string::npos) << part << " not in " << config;
  for (const char* absent : {"\"filters\"", "\"groups\"", "kernel_initializer", "pointwise"})
    EXPECT_EQ(config.find(absent), std::string::npos) << absent << " in " << config;
  SeparableConv2D separable(4, 3, {.pointwise_initializer = Initializer("he_normal", 1)});
  separable.set_name("separable_conv2d");
  EXPECT_NE(separable.get_config().find(R"("pointwise_initializer":{"class_name":"HeNormal")"), std::string::npos);
  testing::expect_config_round_trip(depthwise);
  testing::expect_config_round_trip(separable);
  // tf.keras 2 writes groups: 1; Keras 3 wraps initializers with module and registered_name.
  LayerHandle from_keras = layer_from_config("SeparableConv2D", R"({"filters": 2, "kernel_size": [3, 3], "groups": 1,
      "depth_multiplier": 1, "pointwise_initializer": {"module": "keras.initializers", "class_name": "Ones",
      "config": {}, "registered_name": null}})");
  EXPECT_EQ(from_keras->compute_output_shape({5, 5, 3}), (Dims{3, 3, 2}));
  KILN_EXPECT_ERROR(DepthwiseConv2D(3, {.depth_multiplier = 0}), ValueError, "[DepthwiseConv2D] expected depth_multiplier > 0");
  KILN_EXPECT_ERROR(SeparableConv2D(0, 3), ValueError, "[SeparableConv2D] expected filters > 0");
  DepthwiseConv2D named(3, {.name = "dw"});
  named(Tensor(testing::ramp({1, 3, 3, 2})));
  KILN_EXPECT_ERROR(named(Tensor(testing::ramp({1, 3, 3, 4}))), ShapeError, "[dw] expected input (batch, height, width, 2)");
}

}  // namespace
}  // namespace kiln::keras
