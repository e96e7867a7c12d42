// ZeroPadding2D, Cropping2D, UpSampling2D (nearest and bilinear), Permute and RepeatVector:
// values by hand (bilinear against tf.image.resize's numbers), f64 gradients of whole layers,
// channels_first, configs in Keras's forms, errors naming the layer, and a saved model.
#include <gtest/gtest.h>

#include "tests/keras/layers/layer_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using kiln::testing::random_f64;
using testing::check_layer_gradients;
using testing::f64_grad_options;
using testing::ramp;

TEST(ZeroPadding2DTest, PadsEachEdgeWithZeros) {
  ZeroPadding2D pad({{1, 0}, {0, 2}});
  Tensor y = pad(Tensor(ramp({1, 2, 2, 1})));
  EXPECT_EQ(y.dims(), (Dims{1, 3, 4, 1}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0}));
  ZeroPadding2D first(1, {.data_format = "channels_first"});
  EXPECT_EQ(first.compute_output_shape({3, 2, 5}), (Dims{3, 4, 7}));
  EXPECT_EQ(first(Tensor(ramp({1, 1, 1, 1}))).to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 1, 0, 0, 0, 0}));
}

TEST(Cropping2DTest, CropsEachEdge) {
  Cropping2D crop({{1, 0}, {0, 1}});
  Tensor y = crop(Tensor(ramp({1, 3, 3, 1})));
  EXPECT_EQ(y.dims(), (Dims{1, 2, 2, 1}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{4, 5, 7, 8}));
  Cropping2D first({1, 1}, {.data_format = "channels_first", .name = "crop"});
  EXPECT_EQ(first.compute_output_shape({2, 5, 4}), (Dims{2, 3, 2}));
  KILN_EXPECT_ERROR(first(Tensor(ramp({1, 1, 2, 4}))), ShapeError, "[crop] cropping [[1,1],[1,1]] leaves nothing");
  KILN_EXPECT_ERROR(Cropping2D(-1), ValueError, "[Cropping2D] cropping must be >= 0");
}

TEST(UpSampling2DTest, NearestRepeatsEachPixel) {
  UpSampling2D up({2, 3});
  Tensor y = up(Tensor(ramp({1, 2, 2, 1})));
  EXPECT_EQ(y.dims(), (Dims{1, 4, 6, 1}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                                      3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
  UpSampling2D first(2, {.data_format = "channels_first"});
  EXPECT_EQ(first(Tensor(ramp({1, 2, 1, 1}))).to_vector<float>(), (std::vector<float>{1, 1, 1, 1, 2, 2, 2, 2}));
}

TEST(UpSampling2DTest, BilinearMatchesTfImageResize) {
  // tf.image.resize([[1, 2], [3, 4]] as (1, 2, 2, 1), (4, 4), "bilinear") (half-pixel
  // centers): rows 1, 1.25, 1.75, 2 in each direction.
  UpSampling2D up(2, {.interpolation = "bilinear"});
  const std::vector<float> got = up(Tensor(ramp({1, 2, 2, 1}))).to_vector<float>();
  const std::vector<float> want = {1.0, 1.25, 1.75, 2.0, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3.0, 3.25, 3.75, 4.0};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  KILN_EXPECT_ERROR(UpSampling2D(2, {.interpolation = "bicubic"}), ValueError, "interpolation='bicubic'");
}

TEST(PermuteTest, ReordersTheNonBatchAxes) {
  Permute p({2, 1});
  Tensor y = p(Tensor(ramp({1, 2, 3})));
  EXPECT_EQ(y.dims(), (Dims{1, 3, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(Permute({3, 1, 2}).compute_output_shape({4, 5, 6}), (Dims{6, 4, 5}));
  KILN_EXPECT_ERROR(Permute({0, 1}), ValueError, "must be a permutation of 1..2");
  Permute named({2, 1}, {.name = "perm"});
  KILN_EXPECT_ERROR(named(Tensor(ramp({1, 2, 2, 2}))), ShapeError, "[perm] dims=[2,1] permutes 2 axes");
}

TEST(RepeatVectorTest, RepeatsTheFeatureVector) {
  RepeatVector r(3);
  Tensor y = r(Tensor(ramp({2, 2})));
  EXPECT_EQ(y.dims(), (Dims{2, 3, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
  KILN_EXPECT_ERROR(RepeatVector(0), ValueError, "n > 0");
  RepeatVector named(2, {.name = "rep"});
  KILN_EXPECT_ERROR(named(Tensor(ramp({1, 2, 2}))), ShapeError, "[rep] expected input (batch, features)");
}

TEST(ReshapingLayersTest, GradientsMatchF64FiniteDifferences) {
  const Dims image = {2, 3, 4, 2};
  ZeroPadding2D pad({{1, 2}, {0, 1}}, {.dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(pad, random_f64(image, 1), false, f64_grad_options()));
  Cropping2D crop({{1, 0}, {0, 1}}, {.data_format = "channels_first", .dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(crop, random_f64(image, 2), false, f64_grad_options()));
  UpSampling2D nearest({2, 1}, {.dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(nearest, random_f64(image, 3), false, f64_grad_options()));
  UpSampling2D bilinear({2, 3}, {.interpolation = "bilinear", .dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(bilinear, random_f64(image, 4), false, f64_grad_options()));
  Permute permute({3, 1, 2}, {.dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(permute, random_f64(image, 5), false, f64_grad_options()));
  RepeatVector repeat(3, {.dtype = "float64"});
  EXPECT_TRUE(check_layer_gradients(repeat, random_f64({2, 4}, 6), false, f64_grad_options()));
}

TEST(ReshapingLayersTest, ConfigsAreKerasJsonAndRoundTrip) {
  ZeroPadding2D pad({1, 2});
  pad.set_name("zero_padding2d");
  EXPECT_EQ(pad.get_config(), R"({"data_format":"channels_last","dtype":"float32","name":"zero_padding2d",)"
                              R"("padding":[[1,1],[2,2]],"trainable":true})");
  for (const LayerHandle& l : std::vector<LayerHandle>{
           ZeroPadding2D({{1, 0}, {2, 3}}), Cropping2D(2, {.data_format = "channels_first"}),
           UpSampling2D({2, 3}, {.interpolation = "bilinear"}), Permute({2, 1}), RepeatVector(4)})
    testing::expect_config_round_trip(*l);
  // Keras writes ints and pairs too, and Keras 3 a DTypePolicy object.
  EXPECT_EQ(layer_from_config("ZeroPadding2D", R"({"padding": 2})")->compute_output_shape({3, 3, 1}), (Dims{7, 7, 1}));
  EXPECT_EQ(layer_from_config("Cropping2D", R"({"cropping": [1, 0]})")->compute_output_shape({3, 3, 1}), (Dims{1, 3, 1}));
  EXPECT_EQ(layer_from_config("UpSampling2D", R"({"size": [2, 2], "interpolation": "nearest", "dtype": {"module":
      "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}})")
                ->compute_output_shape({3, 3, 1}),
            (Dims{6, 6, 1}));
  KILN_EXPECT_ERROR(layer_from_config("ZeroPadding2D", R"({"padding": "x"})"), ConfigError, "[ZeroPadding2D.from_config]");
}

}  // namespace
}  // namespace kiln::keras
