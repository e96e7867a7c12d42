// MaxPooling1D / AveragePooling1D, GlobalMaxPooling1D / 2D and GlobalAveragePooling1D: values by
// hand ("same" windows average only real steps, as TensorFlow; a masked mean over the unmasked
// steps, as Keras), f64 gradients, channels_first, configs in Keras's [n] and int forms.
#include <gtest/gtest.h>

#include <cmath>

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

TEST(GlobalAveragePooling1DTest, AveragesOverSteps) {
  // x: steps (1, 2), (3, 4), (5, 9): the means are 3 and 5.
  const HostTensor x = HostTensor::from_vector<float>({1, 3, 2}, {1, 2, 3, 4, 5, 9});
  GlobalAveragePooling1D g;
  Tensor y = g(Tensor(x));
  EXPECT_EQ(y.dims(), (Dims{1, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 5}));
  GlobalAveragePooling1D keep({.keepdims = true});
  y = keep(Tensor(x));
  EXPECT_EQ(y.dims(), (Dims{1, 1, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 5}));
  // channels_first: (1, 2 features, 3 steps), the same numbers transposed.
  GlobalAveragePooling1D first({.data_format = "channels_first", .keepdims = true});
  y = first(Tensor(HostTensor::from_vector<float>({1, 2, 3}, {1, 3, 5, 2, 4, 9})));
  EXPECT_EQ(y.dims(), (Dims{1, 2, 1}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 5}));
  EXPECT_EQ(first.compute_output_shape({4, 7}), (Dims{4, 1}));
  EXPECT_EQ(GlobalAveragePooling1D().compute_output_shape({kNoneDim, 16}), (Dims{16}));
  KILN_EXPECT_ERROR(GlobalAveragePooling1D({.name = "gap"})(Tensor(ramp({1, 2, 2, 2}))), ShapeError,
                    "[gap] expected input (batch, steps, features)");
  KILN_EXPECT_ERROR(GlobalAveragePooling1D({.data_format = "nhwc"}), ConfigError, "is not a Keras data format");
}

TEST(GlobalAveragePooling1DTest, AMaskAveragesTheUnmaskedStepsAsKerasDoes) {
  // Two rows of 3 steps of 2 features; row 0 keeps steps 0 and 1, row 1 step 2 only.
  const HostTensor x = HostTensor::from_vector<float>({2, 3, 2}, {1, 2, 3, 4, 5, 9, 10, 20, 30, 40, 50, 60});
  const Tensor mask(HostTensor::from_vector<bool>({2, 3}, {true, true, false, false, false, true}));
  GlobalAveragePooling1D g;
  Tensor y = g.call_with_mask(Tensor(x), mask);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2, 3, 50, 60}));
  EXPECT_FALSE(g.compute_mask(Tensor(x), mask).defined());  // Keras: the mask stops here
  GlobalAveragePooling1D keep({.keepdims = true});
  y = keep.call_with_mask(Tensor(x), mask);
  EXPECT_EQ(y.dims(), (Dims{2, 1, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2, 3, 50, 60}));
  // channels_first: the mask runs along the last axis ((1, 2 features, 2 steps), step 1 masked).
  GlobalAveragePooling1D first({.data_format = "channels_first"});
  y = first.call_with_mask(Tensor(HostTensor::from_vector<float>({1, 2, 2}, {1, 3, 2, 4})),
                           Tensor(HostTensor::from_vector<bool>({1, 2}, {true, false})));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 2}));
  // Every step masked: 0 / 0, NaN, as Keras's sum(x * mask) / sum(mask) gives.
  y = g.call_with_mask(Tensor(x), Tensor(HostTensor::from_vector<bool>({2, 3}, {false, false, false, true, true, true})));
  const std::vector<float> v = y.to_vector<float>();
  EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]));
  EXPECT_EQ(v[2], 30);
  EXPECT_EQ(v[3], 40);
}

TEST(GlobalAveragePooling1DTest, TakesEmbeddingsMaskInAModel) {
  // Embedding rows: id k -> (k, 10k); mask_zero masks the padding id 0.
  Sequential model({InputLayer({.shape = {4}}), Embedding(4, 2, {.mask_zero = true}), GlobalAveragePooling1D(),
                    Dense(1, {.kernel_initializer = "ones"})});
  const HostTensor rows = HostTensor::from_vector<float>({4, 2}, {0, 0, 1, 10, 2, 20, 3, 30});
  model.layers()[0]->weights()[0].assign(Tensor(rows));
  // Row 0: ids 1, 3 -> mean (2, 20) -> 22; row 1: ids 2 -> (2, 20) -> 22; row 2: 1, 2, 3, 3 -> (2.25, 22.5).
  const HostTensor ids = HostTensor::from_vector<int32_t>({3, 4}, {1, 3, 0, 0, 2, 0, 0, 0, 1, 2, 3, 3});
  EXPECT_EQ(model.predict(ids).to_vector<float>(), (std::vector<float>{22, 22, 24.75f}));
  // Without the mask the padding rows count: (1 + 3 + 0 + 0) / 4 = 1 -> 1 + 10 = 11.
  Sequential unmasked({InputLayer({.shape = {4}}), Embedding(4, 2), GlobalAveragePooling1D(),
                       Dense(1, {.kernel_initializer = "ones"})});
  unmasked.layers()[0]->weights()[0].assign(Tensor(rows));
  EXPECT_EQ(unmasked.predict(ids).to_vector<float>()[0], 11);
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
  GlobalAveragePooling1D gap({.dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(gap, random_f64({2, 5, 3}, 4), false, f64_grad_options()));
  // The masked mean: row 0 keeps 3 steps, row 1 one.
  GlobalAveragePooling1D masked({.keepdims = true, .dtype = "float64"});
  const Tensor mask(HostTensor::from_vector<bool>({2, 5}, {true, false, true, true, false, false, false, false, true, false}));
  EXPECT_TRUE(kiln::testing::check_gradients([&](const std::vector<Tensor>& xs) { return masked.call_with_mask(xs[0], mask); },
                                             {random_f64({2, 5, 3}, 5)}, f64_grad_options()));
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
                                                       GlobalMaxPooling1D({.keepdims = true}), GlobalMaxPooling2D(),
                                                       GlobalAveragePooling1D({.data_format = "channels_first"})})
    testing::expect_config_round_trip(*l);
  EXPECT_EQ(layer_from_config("AveragePooling1D", R"({"pool_size": 4, "strides": null})")->compute_output_shape({9, 2}),
            (Dims{2, 2}));
  KILN_EXPECT_ERROR(layer_from_config("MaxPooling1D", R"({"pool_size": [2, 2]})"), ConfigError,
                    "pool_size must be an int or a list of one int");
}

}  // namespace
}  // namespace kiln::keras
