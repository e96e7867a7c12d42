// Conv2DTranspose: Keras's output sizes, values against a scatter loop (each input pixel adds
// its kernel-weighted copy to the output), f64 gradients, channels_first, configs with
// output_padding, errors naming the layer, and a saved model with Keras's weight names.
#include <gtest/gtest.h>

#include <algorithm>

#include "kiln/trace/ops/shape.h"
#include "tests/keras/layers/layer_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using kiln::testing::random_f64;
using testing::check_layer_gradients;
using testing::f64_grad_options;

struct Geometry {
  Dims strides, dilation, pad_low;  // pad_low: rows/cols cut from the top/left of the full scatter
};

// y[n, i*s + a*d - top, j*s + b*d - left, f] += x[n, i, j, c] w[a, b, f, c], then + bias.
std::vector<float> scatter_loop(const HostTensor& x, const HostTensor& w, const HostTensor& bias, const Dims& out,
                                const Geometry& g) {
  const int64_t n = x.dims()[0], h = x.dims()[1], wd = x.dims()[2], c = x.dims()[3];
  const int64_t kh = w.dims()[0], kw = w.dims()[1], f = w.dims()[2], oh = out[0], ow = out[1];
  const std::vector<float> xs = x.to_vector<float>(), ws = w.to_vector<float>(), bs = bias.to_vector<float>();
  std::vector<double> y(static_cast<size_t>(n * oh * ow * f));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < wd; ++j)
        for (int64_t a = 0; a < kh; ++a)
          for (int64_t e = 0; e < kw; ++e) {
            const int64_t r = i * g.strides[0] + a * g.dilation[0] - g.pad_low[0];
            const int64_t q = j * g.strides[1] + e * g.dilation[1] - g.pad_low[1];
            if (r < 0 || r >= oh || q < 0 || q >= ow) continue;
            for (int64_t o = 0; o < f; ++o)
              for (int64_t ch = 0; ch < c; ++ch)
                y[static_cast<size_t>(((b * oh + r) * ow + q) * f + o)] +=
                    double(xs[static_cast<size_t>(((b * h + i) * wd + j) * c + ch)]) *
                    ws[static_cast<size_t>(((a * kw + e) * f + o) * c + ch)];
          }
  std::vector<float> out_values;
  for (size_t i = 0; i < y.size(); ++i) out_values.push_back(static_cast<float>(y[i] + bs[i % static_cast<size_t>(f)]));
  return out_values;
}

// TensorFlow's "same" padding of the convolution this transposes: total = max((in - 1) * s +
// k_eff - out, 0), the smaller half on top.
int64_t same_low(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d) {
  return std::max<int64_t>((in - 1) * s + (k - 1) * d + 1 - out, 0) / 2;
}

TEST(Conv2DTransposeTest, OutputSizesFollowKerasDeconvOutputLength) {
  EXPECT_EQ(Conv2DTranspose(2, 3).compute_output_shape({5, 5, 1}), (Dims{7, 7, 2}));
  EXPECT_EQ(Conv2DTranspose(2, 3, {.strides = {2, 2}}).compute_output_shape({5, 4, 1}), (Dims{11, 9, 2}));
  EXPECT_EQ(Conv2DTranspose(2, {3, 2}, {.strides = {2, 2}, .padding = "same"}).compute_output_shape({5, 4, 1}),
            (Dims{10, 8, 2}));
  EXPECT_EQ(Conv2DTranspose(2, 3, {.strides = {2, 3}, .output_padding = Dims{1, 2}}).compute_output_shape({4, 4, 1}),
            (Dims{10, 14, 2}));
  EXPECT_EQ(Conv2DTranspose(2, 3, {.strides = {2, 2}, .padding = "same", .output_padding = Dims{0, 1}})
                .compute_output_shape({4, 4, 1}),
            (Dims{7, 8, 2}));
  EXPECT_EQ(Conv2DTranspose(2, 3, {.dilation_rate = {2, 1}}).compute_output_shape({4, 4, 1}), (Dims{8, 6, 2}));
}

TEST(Conv2DTransposeTest, MatchesAScatterLoop) {
  struct Case {
    Dims kernel;
    Conv2DTransposeOptions o;
  };
  const Case cases[] = {
      {{3, 2}, {}},
      {{3, 2}, {.strides = {2, 2}}},
      {{3, 2}, {.strides = {2, 2}, .padding = "same"}},
      {{3, 3}, {.strides = {2, 2}, .padding = "same", .output_padding = Dims{1, 1}}},
      {{3, 2}, {.strides = {2, 3}, .output_padding = Dims{1, 0}}},
      {{3, 2}, {.padding = "same", .dilation_rate = {2, 1}}},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    Conv2DTransposeOptions o = c.o;
    o.kernel_initializer = Initializer("random_uniform", seed);
    o.bias_initializer = Initializer("random_uniform", seed + 50);
    Conv2DTranspose layer(2, c.kernel, o);
    const HostTensor x = random_f64({2, 3, 4, 3}, seed++).astype(DType::kF32);
    const std::vector<float> got = layer(Tensor(x)).to_vector<float>();
    const Dims out = layer.compute_output_shape({3, 4, 3});
    Geometry g{o.strides, o.dilation_rate, {0, 0}};
    if (o.padding == "same")
      for (size_t i = 0; i < 2; ++i) g.pad_low[i] = same_low(i == 0 ? 3 : 4, out[i], c.kernel[i], o.strides[i], o.dilation_rate[i]);
    const std::vector<float> want = scatter_loop(x, layer.kernel().storage(), layer.bias().storage(), out, g);
    ASSERT_EQ(got.size(), want.size()) << seed;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "case " << seed - 1 << " at " << i;
  }
  // Each pixel through a ones kernel: its 2x2 copy, 3 apart; "valid" output is 1 * 3 by 2 * 3.
  Conv2DTranspose spread(1, 2, {.strides = {3, 3}, .use_bias = false, .kernel_initializer = "ones"});
  EXPECT_EQ(spread(Tensor(testing::ramp({1, 1, 2, 1}))).to_vector<float>(),
            (std::vector<float>{1, 1, 0, 2, 2, 0, 1, 1, 0, 2, 2, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(spread.kernel().shape(), Shape(DType::kF32, {2, 2, 1, 1}));
}

TEST(Conv2DTransposeTest, GradientsMatchF64FiniteDifferences) {
  const Conv2DTransposeOptions cases[] = {
      {.activation = "tanh"},
      {.strides = {2, 2}, .padding = "same"},
      {.strides = {2, 2}, .output_padding = Dims{1, 0}},
      {.strides = {1, 2}, .padding = "same", .data_format = "channels_first"},
  };
  uint32_t seed = 20;
  for (Conv2DTransposeOptions o : cases) {
    o.bias_initializer = Initializer("random_uniform", seed);
    o.dtype = "float64";
    Conv2DTranspose layer(2, {2, 3}, o);
    EXPECT_TRUE(check_layer_gradients(layer, random_f64({2, 3, 3, 2}, seed++), false, f64_grad_options())) << seed;
  }
}

TEST(Conv2DTransposeTest, ChannelsFirstIsChannelsLastOnTransposedImages) {
  const Initializer init("he_normal", 3);
  Conv2DTranspose last(3, 3, {.strides = {2, 2}, .padding = "same", .kernel_initializer = init}),
      first(3, 3, {.strides = {2, 2}, .padding = "same", .data_format = "channels_first", .kernel_initializer = init});
  const Tensor x(random_f64({2, 4, 5, 2}, 4).astype(DType::kF32));
  const std::vector<float> want = last(x).to_vector<float>();
  const std::vector<float> got = transpose(first(transpose(x, {0, 3, 1, 2})), {0, 2, 3, 1}).to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

TEST(Conv2DTransposeTest, ConfigRoundTripsAndErrorsNameTheLayer) {
  Conv2DTranspose layer(4, 3, {.strides = {2, 2}, .padding = "same", .output_padding = Dims{1, 1}});
  layer.set_name("conv2d_transpose");
  const std::string config = layer.get_config();
  for (const char* part : {R"("output_padding":[1,1])", R"("kernel_size":[3,3])", R"("filters":4)"})
    EXPECT_NE(config.find(part), std::string::npos) << part << " not in " << config;
  EXPECT_EQ(config.find("groups"), std::string::npos) << config;  // Keras 3's Conv2DTranspose rejects it
  testing::expect_config_round_trip(layer);
  testing::expect_config_round_trip(Conv2DTranspose(2, {1, 3}));
  // tf.keras 2 writes groups: 1 and output_padding: null.
  EXPECT_EQ(layer_from_config("Conv2DTranspose", R"({"filters": 2, "kernel_size": [2, 2], "strides": [2, 2],
      "groups": 1, "output_padding": null})")->compute_output_shape({3, 3, 1}),
            (Dims{6, 6, 2}));
  KILN_EXPECT_ERROR(layer_from_config("Conv2DTranspose", R"({"filters": 2, "kernel_size": 2, "groups": 2})"), ConfigError,
                    "groups=2 is not supported");
  KILN_EXPECT_ERROR(Conv2DTranspose(2, 3, {.strides = {2, 2}, .output_padding = Dims{2, 0}}), ValueError,
                    "output_padding=[2,0] must be >= 0 and less than strides=[2,2]");
  Conv2DTranspose named(2, 3, {.name = "up"});
  named(Tensor(testing::ramp({1, 2, 2, 3})));
  KILN_EXPECT_ERROR(named(Tensor(testing::ramp({1, 2, 2, 4}))), ShapeError, "[up] expected input (batch, height, width, 3)");
}

}  // namespace
}  // namespace kiln::keras
