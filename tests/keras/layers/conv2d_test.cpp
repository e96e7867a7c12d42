// Conv2D: output shapes for each padding/stride/dilation, hand-computed values, gradients
// against finite differences (strides, same padding, dilation, groups), argument errors
// that name the layer, the tf.keras config and the MNIST convnet's summary.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/keras/keras_testing.h"
#include "tests/keras/layer_gradients.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using kiln::testing::random_f64;
using testing::check_layer_gradients;

HostTensor image_3x3() {  // (1, 3, 3, 1) holding 1..9 row-major
  return HostTensor::from_vector<float>({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
}

Initializer constant(double value) {
  Initializer c("constant");
  c.value = value;
  return c;
}

TEST(Conv2DTest, OutputShapesFollowPaddingStridesAndDilation) {
  EXPECT_EQ(Conv2D(8, 3).compute_output_shape({28, 28, 1}), (Dims{26, 26, 8}));
  EXPECT_EQ(Conv2D(8, 3, {.padding = "same"}).compute_output_shape({28, 28, 1}), (Dims{28, 28, 8}));
  EXPECT_EQ(Conv2D(8, 3, {.strides = {2, 2}, .padding = "same"}).compute_output_shape({28, 27, 1}),
            (Dims{14, 14, 8}));
  EXPECT_EQ(Conv2D(8, 3, {.strides = {2, 2}}).compute_output_shape({28, 28, 1}), (Dims{13, 13, 8}));
  EXPECT_EQ(Conv2D(8, {3, 2}, {.dilation_rate = {2, 3}}).compute_output_shape({28, 28, 1}), (Dims{24, 25, 8}));
  Conv2D c(5, 3, {.strides = {2, 1}, .padding = "same", .dilation_rate = {1, 2}});
  EXPECT_EQ(c(Tensor(HostTensor(Shape(DType::kF32, {2, 9, 8, 3})))).dims(), (Dims{2, 5, 8, 5}));
}

TEST(Conv2DTest, ComputesWindowSumsPlusBiasThenActivation) {
  auto conv = [](Conv2DLayerOptions o) {
    o.kernel_initializer = "ones";
    o.bias_initializer = constant(0.5);
    return Conv2D(1, {2, 2}, o);
  };
  Conv2D valid = conv({.activation = "relu"});
  EXPECT_EQ(valid(Tensor(image_3x3())).to_vector<float>(), (std::vector<float>{12.5, 16.5, 24.5, 28.5}));
  // "same" with stride 2 pads one row/column at the bottom/right (TensorFlow's rule).
  Conv2D same = conv({.strides = {2, 2}, .padding = "same"});
  EXPECT_EQ(same(Tensor(image_3x3())).to_vector<float>(), (std::vector<float>{12.5, 9.5, 15.5, 9.5}));
  Conv2D dilated = conv({.dilation_rate = {2, 2}});  // the four corners: 1 + 3 + 7 + 9
  EXPECT_EQ(dilated(Tensor(image_3x3())).to_vector<float>(), (std::vector<float>{20.5}));
  // groups=2: filter 0 sees channels 0-1, filter 1 sees channels 2-3.
  Conv2D grouped(2, 1, {.groups = 2, .use_bias = false, .kernel_initializer = "ones"});
  EXPECT_EQ(grouped(Tensor::from_vector<float>({1, 1, 1, 4}, {1, 2, 3, 4})).to_vector<float>(),
            (std::vector<float>{3, 7}));
  EXPECT_EQ(grouped.kernel().shape(), Shape(DType::kF32, {1, 1, 2, 2}));
}

struct Conv2DCase {
  const char* name;
  Dims x;
  int64_t filters;
  Dims kernel;
  Conv2DLayerOptions options;
};

TEST(Conv2DTest, GradientsMatchFiniteDifferences) {
  const Conv2DCase cases[] = {
      {"valid_tanh", {2, 5, 5, 2}, 3, {3, 3}, {.activation = "tanh"}},
      {"same_stride2", {1, 6, 5, 2}, 2, {3, 2}, {.strides = {2, 2}, .padding = "same"}},
      {"same_stride2_odd", {1, 7, 7, 1}, 2, {3, 3}, {.strides = {2, 2}, .padding = "same", .activation = "sigmoid"}},
      {"dilated", {1, 7, 6, 1}, 2, {2, 2}, {.dilation_rate = {2, 3}}},
      {"dilated_same", {1, 6, 6, 2}, 2, {3, 3}, {.padding = "same", .dilation_rate = {2, 2}}},
      {"groups", {1, 4, 4, 4}, 6, {2, 2}, {.padding = "same", .groups = 2}},
      {"depthwise_no_bias", {1, 5, 5, 3}, 3, {3, 3}, {.strides = {2, 1}, .groups = 3, .use_bias = false}},
  };
  uint32_t seed = 1;
  for (const Conv2DCase& c : cases) {
    Conv2DLayerOptions o = c.options;
    o.bias_initializer = Initializer("random_uniform", seed);  // a non-zero bias
    Conv2D layer(c.filters, c.kernel, o);
    layer.set_name(c.name);
    EXPECT_TRUE(check_layer_gradients(layer, random_f64(c.x, seed++).astype(DType::kF32), false)) << c.name;
  }
}

TEST(Conv2DTest, RejectsBadArgumentsAndInputsNamingTheLayer) {
  KILN_EXPECT_ERROR(Conv2D(8, 3, {.data_format = "channels_middle"}), ConfigError,
                    "[Conv2D] data_format='channels_middle' is not a Keras data format");
  KILN_EXPECT_ERROR(Conv2D(6, 3, {.groups = 4}), ValueError, "divisible by groups");
  KILN_EXPECT_ERROR(Conv2D(6, 3, {.padding = "causal"}), ValueError, "padding='causal'");
  KILN_EXPECT_ERROR(Conv2D(6, Dims{3}), ValueError, "kernel_size to be two positive ints");
  KILN_EXPECT_ERROR(Conv2D(0, 3), ValueError, "filters > 0");
  Conv2D conv(4, 3, {.name = "conv"});
  KILN_EXPECT_ERROR(conv(Tensor(HostTensor(Shape(DType::kF32, {2, 28, 28})))), ShapeError,
                    "[conv] expected input of shape (batch, height, width, channels)");
  KILN_EXPECT_ERROR(conv(Tensor(HostTensor(Shape(DType::kF32, {2, 2, 9, 1})))), ShapeError,
                    "an output dimension would be <= 0");
  conv(Tensor(HostTensor(Shape(DType::kF32, {2, 5, 5, 3}))));
  KILN_EXPECT_ERROR(conv(Tensor(HostTensor(Shape(DType::kF32, {2, 5, 5, 2})))), ShapeError,
                    "[conv] expected input (batch, height, width, 3), received f32[2,5,5,2]");
  Conv2D grouped(4, 1, {.groups = 2, .name = "grouped"});
  KILN_EXPECT_ERROR(grouped(Tensor(HostTensor(Shape(DType::kF32, {1, 2, 2, 3})))), ShapeError,
                    "[grouped] the input channels (3) must be divisible by groups=2");
}

TEST(Conv2DTest, ConfigIsTfKerasJsonAndRoundTrips) {
  Conv2D conv(32, 3, {.activation = "relu"});
  conv.set_name("conv2d");
  const std::string config = conv.get_config();
  EXPECT_EQ(config,
            R"({"activation":"relu","activity_regularizer":null,"bias_constraint":null,)"
            R"("bias_initializer":{"class_name":"Zeros","config":{}},"bias_regularizer":null,)"
            R"("data_format":"channels_last","dilation_rate":[1,1],"dtype":"float32","filters":32,"groups":1,)"
            R"("kernel_constraint":null,"kernel_initializer":{"class_name":"GlorotUniform","config":{"seed":null}},)"
            R"("kernel_regularizer":null,"kernel_size":[3,3],"name":"conv2d","padding":"valid","strides":[1,1],)"
            R"("trainable":true,"use_bias":true})");
  EXPECT_EQ(layer_from_config("Conv2D", config)->get_config(), config);
  Conv2D other(6, {5, 3}, {.strides = {2, 1}, .padding = "same", .dilation_rate = {1, 2}, .groups = 3,
                           .use_bias = false, .kernel_initializer = Initializer("he_normal", 4)});
  other.set_name("c");
  EXPECT_EQ(layer_from_config("Conv2D", other.get_config())->get_config(), other.get_config());
  // Keras also writes a single int for square sizes.
  LayerHandle from_ints = layer_from_config("Conv2D", R"({"filters":2,"kernel_size":3,"strides":2})");
  EXPECT_EQ(from_ints->compute_output_shape({9, 9, 1}), (Dims{4, 4, 2}));
}

// The Keras MNIST convnet: summary shapes and parameter counts as tf.keras 2.x prints them
// (names cut at the column's 29 characters, as Keras does).
TEST(Conv2DTest, MnistConvnetSummaryMatchesKeras) {
  Sequential model({Conv2D(32, 3, {.activation = "relu", .input_shape = {28, 28, 1}}), MaxPooling2D(),
                    Conv2D(64, 3, {.activation = "relu"}), MaxPooling2D(), Flatten(), Dropout(0.5), Dense(10)});
  const std::string text = model.summary_text();
  for (const char* part : {"conv2d (Conv2D)", "(None, 26, 26, 32)", "320", "max_pooling2d (MaxPooling2D)",
                           "(None, 13, 13, 32)", "conv2d_1 (Conv2D)", "(None, 11, 11, 64)", "18496",
                           "max_pooling2d_1 (MaxPooling2 (None, 5, 5, 64)", "(None, 1600)", "16010",
                           "Total params: 34,826", "Non-trainable params: 0"})
    EXPECT_NE(text.find(part), std::string::npos) << part << " not in\n" << text;
  std::unique_ptr<Sequential> copy = Sequential::from_json(model.to_json());
  EXPECT_EQ(copy->to_json(), model.to_json());
  EXPECT_EQ(copy->count_params(), 34826);
}

// A small Keras-API convnet learns through fit: one epoch over 2,048 MNIST images (64 steps
// of 32), scored on 1,000 test images. tests/e2e/mnist_cnn_fit_test.cpp holds the full
// convnet to issue 8's bar. Skips without the MNIST files (scripts/fetch_mnist.sh).
TEST(Conv2DTest, SmallConvnetLearnsAnMnistSubsetInOneEpoch) {
  std::optional<testing::MnistSubset> d = testing::load_mnist_subset(2048, 1000);
  if (!d) GTEST_SKIP() << "MNIST files absent";
  auto images = [](const HostTensor& x) { return x.reshape({x.dims()[0], 28, 28, 1}); };
  Sequential model({Conv2D(8, 3, {.activation = "relu", .input_shape = {28, 28, 1}}), MaxPooling2D(),
                    Flatten(), Dense(10)});
  model.compile({.optimizer = Adam({.learning_rate = 0.01}),
                 .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  model.fit(testing::batches(images(d->x_train), d->y_train, 32), {.epochs = 1, .verbose = 0});
  Logs result = model.evaluate(testing::batches(images(d->x_test), d->y_test, 100), {.verbose = 0});
  EXPECT_GE(result.at("accuracy"), 0.85);
}

// Verify that channels_first Conv2D, MaxPooling2D, GlobalAveragePooling2D and Flatten compute
// the channels_last stack on transposed images (Flatten moving channels last first, as Keras
// >= 2.2.3 does, so the Dense kernel after it is the same).
TEST(Conv2DTest, ChannelsFirstIsChannelsLastOnTransposedImages) {
  const Initializer conv_init("he_normal", 1), dense_init("glorot_uniform", 2);
  Sequential last({Conv2D(3, 3, {.activation = "relu", .kernel_initializer = conv_init, .input_shape = {6, 7, 2}}),
                   MaxPooling2D(2), Flatten(), Dense(4, {.kernel_initializer = dense_init})});
  Sequential first({Conv2D(3, 3, {.data_format = "channels_first", .activation = "relu",
                                  .kernel_initializer = conv_init, .input_shape = {2, 6, 7}}),
                    MaxPooling2D({.data_format = "channels_first"}), Flatten({.data_format = "channels_first"}),
                    Dense(4, {.kernel_initializer = dense_init})});
  EXPECT_EQ(first.layers()[0]->compute_output_shape({2, 6, 7}), (Dims{3, 4, 5}));
  const int64_t n = 2, h = 6, w = 7, c = 2;
  std::vector<float> nhwc(n * h * w * c), nchw(nhwc.size());
  for (size_t i = 0; i < nhwc.size(); ++i) nhwc[i] = static_cast<float>(std::sin(0.7 * double(i) + 0.3));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t k = 0; k < c; ++k) nchw[((b * c + k) * h + y) * w + x] = nhwc[((b * h + y) * w + x) * c + k];
  const std::vector<float> want = last.predict(HostTensor::from_vector<float>({n, h, w, c}, nhwc)).to_vector<float>();
  const std::vector<float> got = first.predict(HostTensor::from_vector<float>({n, c, h, w}, nchw)).to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;

  GlobalAveragePooling2D gap_first({.data_format = "channels_first"}), gap_last;
  const std::vector<float> g1 = gap_first(Tensor(HostTensor::from_vector<float>({n, c, h, w}, nchw))).to_vector<float>();
  const std::vector<float> g2 = gap_last(Tensor(HostTensor::from_vector<float>({n, h, w, c}, nhwc))).to_vector<float>();
  ASSERT_EQ(g1.size(), g2.size());
  for (size_t i = 0; i < g1.size(); ++i) EXPECT_NEAR(g1[i], g2[i], 1e-6) << i;
}

}  // namespace
}  // namespace kiln::keras
