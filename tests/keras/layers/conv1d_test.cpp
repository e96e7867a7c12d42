// Conv1D: values against a direct loop over steps (valid, same, causal, strides, dilation,
// channels_first), groups by hand, f64 gradients of the whole layer, Keras configs with [n]
// sizes, errors naming the layer, and a saved model with Keras's weight names.
#include <gtest/gtest.h>

#include "kiln/trace/ops/shape.h"
#include "tests/keras/layers/layer_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using kiln::testing::random_f64;
using testing::check_layer_gradients;
using testing::f64_grad_options;

// y[n, t, f] = b[f] + sum_k,c x[n, t * s + k * d - left, c] w[k, c, f], out of range = 0.
std::vector<float> conv1d_loop(const HostTensor& x, const HostTensor& w, const HostTensor& b, int64_t stride,
                               int64_t dilation, int64_t left, int64_t out_len) {
  const int64_t n = x.dims()[0], len = x.dims()[1], c = x.dims()[2], k = w.dims()[0], f = w.dims()[2];
  const std::vector<float> xs = x.to_vector<float>(), ws = w.to_vector<float>(), bs = b.to_vector<float>();
  std::vector<float> y;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t t = 0; t < out_len; ++t)
      for (int64_t o = 0; o < f; ++o) {
        double acc = bs[static_cast<size_t>(o)];
        for (int64_t j = 0; j < k; ++j) {
          const int64_t at = t * stride + j * dilation - left;
          if (at < 0 || at >= len) continue;
          for (int64_t ch = 0; ch < c; ++ch)
            acc += double(xs[static_cast<size_t>((i * len + at) * c + ch)]) * ws[static_cast<size_t>((j * c + ch) * f + o)];
        }
        y.push_back(static_cast<float>(acc));
      }
  return y;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

TEST(Conv1DTest, MatchesADirectLoopForEachPadding) {
  struct Case {
    Conv1DOptions o;
    int64_t left, out_len;  // the loop's left padding and output length for 7 steps, kernel 3
  };
  const Case cases[] = {
      {{}, 0, 5},
      {{.padding = "same"}, 1, 7},
      {{.padding = "causal"}, 2, 7},
      {{.strides = 2, .padding = "same"}, 1, 4},
      {{.padding = "causal", .dilation_rate = 2}, 4, 7},
      {{.strides = 2, .dilation_rate = 2}, 0, 2},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    Conv1DOptions o = c.o;
    o.kernel_initializer = Initializer("random_uniform", seed);
    o.bias_initializer = Initializer("random_uniform", seed + 100);
    Conv1D conv(4, 3, o);
    const HostTensor x = random_f64({2, 7, 3}, seed++).astype(DType::kF32);
    Tensor y = conv(Tensor(x));
    EXPECT_EQ(y.dims(), (Dims{2, c.out_len, 4})) << c.o.padding;
    expect_near(y.to_vector<float>(), conv1d_loop(x, conv.kernel().storage(), conv.bias().storage(), c.o.strides,
                                                  c.o.dilation_rate, c.left, c.out_len));
  }
  // Causal: the first output sees only step 0 (kernel ones, x = 1, 2, 3, ...).
  Conv1D causal(1, 3, {.padding = "causal", .use_bias = false, .kernel_initializer = "ones"});
  EXPECT_EQ(causal(Tensor(testing::ramp({1, 4, 1}))).to_vector<float>(), (std::vector<float>{1, 3, 6, 9}));
  // groups=2: filter 0 sums channels 0-1, filter 1 channels 2-3.
  Conv1D grouped(2, 1, {.groups = 2, .use_bias = false, .kernel_initializer = "ones"});
  EXPECT_EQ(grouped(Tensor(testing::ramp({1, 1, 4}))).to_vector<float>(), (std::vector<float>{3, 7}));
  EXPECT_EQ(grouped.kernel().shape(), Shape(DType::kF32, {1, 2, 2}));
}

TEST(Conv1DTest, ChannelsFirstIsChannelsLastOnTransposedSequences) {
  const Initializer init("he_normal", 3);
  Conv1D last(3, 2, {.padding = "causal", .kernel_initializer = init}),
      first(3, 2, {.padding = "causal", .data_format = "channels_first", .kernel_initializer = init});
  const Tensor x(random_f64({2, 5, 4}, 4).astype(DType::kF32));
  EXPECT_EQ(first.compute_output_shape({4, 5}), (Dims{3, 5}));
  expect_near(transpose(first(transpose(x, {0, 2, 1})), {0, 2, 1}).to_vector<float>(), last(x).to_vector<float>());
}

TEST(Conv1DTest, GradientsMatchF64FiniteDifferences) {
  const Conv1DOptions cases[] = {
      {.activation = "tanh"},
      {.strides = 2, .padding = "same"},
      {.padding = "causal", .dilation_rate = 2, .activation = "softplus"},
      {.data_format = "channels_first", .groups = 2},
  };
  uint32_t seed = 10;
  for (Conv1DOptions o : cases) {
    o.bias_initializer = Initializer("random_uniform", seed);
    o.dtype = "float64";
    Conv1D conv(4, 3, o);
    EXPECT_TRUE(check_layer_gradients(conv, random_f64({2, 6, 4}, seed++), false, f64_grad_options())) << o.padding;
  }
}

TEST(Conv1DTest, ConfigIsKerasJsonRoundTripsAndErrorsNameTheLayer) {
  Conv1D conv(8, 3, {.padding = "causal", .activation = "relu"});
  conv.set_name("conv1d");
  const std::string config = conv.get_config();
  for (const char* part : {R"("kernel_size":[3])", R"("strides":[1])", R"("dilation_rate":[1])", R"("padding":"causal")",
                           R"("groups":1)", R"("activation":"relu")", R"("kernel_initializer":{"class_name":"GlorotUniform")"})
    EXPECT_NE(config.find(part), std::string::npos) << part << " not in " << config;
  testing::expect_config_round_trip(conv);
  EXPECT_EQ(layer_from_config("Conv1D", R"({"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same"})")
                ->compute_output_shape({9, 1}),
            (Dims{5, 2}));
  KILN_EXPECT_ERROR(Conv1D(4, 3, {.padding = "full"}), ValueError, "padding='full'");
  KILN_EXPECT_ERROR(Conv1D(4, 0), ValueError, "[Conv1D] expected kernel_size, strides and dilation_rate > 0");
  Conv1D named(2, 5, {.name = "c1"});
  KILN_EXPECT_ERROR(named(Tensor(testing::ramp({1, 3, 2}))), ShapeError, "[c1] the window");
}

}  // namespace
}  // namespace kiln::keras
