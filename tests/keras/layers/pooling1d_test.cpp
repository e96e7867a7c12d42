// MaxPooling1D / AveragePooling1D and GlobalMaxPooling1D / 2D: values by hand ("same"
// windows average only real steps, as TensorFlow), f64 gradients, channels_first, configs in
// Keras's [n] and int forms, and a saved model.
#include <gtest/gtest.h>

#include "tests/keras/layers/layer_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using kiln::testing::random_f64;
using testing::check_layer_gradients;
using testing::f64_grad_options;
using testing::ramp;

TEST(Pooling1DTest, MaxAndAverageOverWindowsOfSteps) {
  // x: 5 steps of 2 features: (1, 2), (3, 4), ..., (9, 10).
  MaxPooling1D max_pool(2);
  Tensor y = max_pool(Tensor(ramp({1, 5, 2})));
  EXPECT_EQ(y.dims(), (Dims{1, 2, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 4, 7, 8}));
  // "same", stride 2 over 5 steps: windows {0, 1}, {2, 3}, {4} (the last averages one step).
  AveragePooling1D avg(2, {.padding = "same"});
  EXPECT_EQ(avg(Tensor(ramp({1, 5, 2}))).to_vector<float>(), (std::vector<float>{2, 3, 6, 7, 9, 10}));
  AveragePooling1D overlapping(3, {.strides = 1});
  EXPECT_EQ(overlapping(Tensor(ramp({1, 5, 1}))).to_vector<float>(), (std::vector<float>{2, 3, 4}));
  MaxPooling1D first(2, {.data_format = "channels_first"});  // x: (1, 2 features, 4 steps)
  EXPECT_EQ(first(Tensor(ramp({1, 2, 4}))).to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(first.compute_output_shape({2, 4}), (Dims{2, 2}));
  MaxPooling1D named(2, {.name = "pool"});
  KILN_EXPECT_ERROR(named(Tensor(ramp({1, 4, 4, 1}))), ShapeError, "[pool] expected input (batch, steps, features)");
  KILN_EXPECT_ERROR(MaxPooling1D(0), ValueError, "pool_size and strides > 0");
}

TEST(GlobalMaxPoolingTest, TakesTheMaximumOverSpatialAxes) {
  GlobalMaxPooling1D g1;
  EXPECT_EQ(g1(Tensor(HostTensor::from_vector<float>({1, 3, 2}, {1, 9, 5, 2, 3, 4}))).to_vector<float>(),
            (std::vector<float>{5, 9}));
  GlobalMaxPooling2D g2({.keepdims = true});
  Tensor y = g2(Tensor(HostTensor::from_vector<float>({1, 2, 2, 2}, {1, 8, 7, 2, 3, 4, 5, 6})));
  EXPECT_EQ(y.dims(), (Dims{1, 1, 1, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{7, 8}));
  GlobalMaxPooling2D first({.data_format = "channels_first"});
  EXPECT_EQ(first(Tensor(ramp({1, 2, 2, 2}))).to_vector<float>(), (std::vector<float>{4, 8}));
  EXPECT_EQ(GlobalMaxPooling1D({.data_format = "channels_first", .keepdims = true}).compute_output_shape({3, 7}),
            (Dims{3, 1}));
}

TEST(Pooling1DTest, GradientsMatchF64FiniteDifferences) {
  // Spaced values: no near-ties for max under the finite-difference step.
  const HostTensor x = testing::spaced_f32({2, 7, 3}, 1).astype(DType::kF64);
  MaxPooling1D max_pool(3, {.strides = 2, .padding = "same", .dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(max_pool, x, false, f64_grad_options()));
  AveragePooling1D avg(2, {.strides = 1, .data_format = "channels_first", .dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(avg, random_f64({2, 3, 5}, 2), false, f64_grad_options()));
  GlobalMaxPooling1D g1({.dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(g1, x, false, f64_grad_options()));
  GlobalMaxPooling2D g2({.keepdims = true, .dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(g2, testing::spaced_f32({2, 3, 3, 2}, 3).astype(DType::kF64), false,
                                    f64_grad_options()));
}

TEST(Pooling1DTest, ConfigsAreKerasJsonAndRoundTrip) {
  MaxPooling1D p(3, {.strides = 2, .padding = "same"});
  p.set_name("max_pooling1d");
  EXPECT_EQ(p.get_config(), R"({"data_format":"channels_last","dtype":"float32","name":"max_pooling1d",)"
                            R"("padding":"same","pool_size":[3],"strides":[2],"trainable":true})");
  for (const LayerHandle& l : std::vector<LayerHandle>{p, AveragePooling1D(2, {.data_format = "channels_first"}),
                                                       GlobalMaxPooling1D({.keepdims = true}), GlobalMaxPooling2D()})
    testing::expect_config_round_trip(*l);
  EXPECT_EQ(layer_from_config("AveragePooling1D", R"({"pool_size": 4, "strides": null})")->compute_output_shape({9, 2}),
            (Dims{2, 2}));
  KILN_EXPECT_ERROR(layer_from_config("MaxPooling1D", R"({"pool_size": [2, 2]})"), ConfigError,
                    "pool_size must be an int or a list of one int");
}

}  // namespace
}  // namespace kiln::keras
