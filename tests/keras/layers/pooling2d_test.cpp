// MaxPooling2D, AveragePooling2D and GlobalAveragePooling2D: hand-computed windows (TensorFlow's
// "same" border rule), default strides, gradients against finite differences, errors and the
// tf.keras configs.
#include <gtest/gtest.h>

#include "tests/keras/keras_testing.h"
#include "tests/keras/layer_gradients.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using testing::check_layer_gradients;
using testing::spaced_f32;

Tensor ramp(Dims dims) {  // 1, 2, 3, ... row-major
  HostTensor t(Shape(DType::kF32, std::move(dims)));
  auto v = t.data<float>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  return Tensor(t);
}

TEST(Pooling2DTest, MaxAndAverageOfEachWindowWithStridesDefaultingToPoolSize) {
  MaxPooling2D max_pool;
  AveragePooling2D avg_pool;
  EXPECT_EQ(max_pool.strides(), (Dims{2, 2}));
  EXPECT_EQ(max_pool(ramp({1, 4, 4, 1})).to_vector<float>(), (std::vector<float>{6, 8, 14, 16}));
  EXPECT_EQ(avg_pool(ramp({1, 4, 4, 1})).to_vector<float>(), (std::vector<float>{3.5, 5.5, 11.5, 13.5}));
  // Channels pool independently: x[0, :, :, c] = {1, 3, 5, 7} and {2, 4, 6, 8}.
  EXPECT_EQ(max_pool(ramp({1, 2, 2, 2})).to_vector<float>(), (std::vector<float>{7, 8}));
  EXPECT_EQ(avg_pool(ramp({1, 2, 2, 2})).to_vector<float>(), (std::vector<float>{4, 5}));
  MaxPooling2D overlapping({.pool_size = {2, 2}, .strides = {1, 1}});
  EXPECT_EQ(overlapping(ramp({1, 3, 3, 1})).to_vector<float>(), (std::vector<float>{5, 6, 8, 9}));
}

TEST(Pooling2DTest, SamePaddingAveragesOnlyRealPixels) {
  // 3x3 image 1..9, pool 2, stride 2, "same": windows {1,2,4,5} {3,6} {7,8} {9}.
  AveragePooling2D avg_pool({.padding = "same"});
  MaxPooling2D max_pool({.padding = "same"});
  EXPECT_EQ(avg_pool(ramp({1, 3, 3, 1})).to_vector<float>(), (std::vector<float>{3, 4.5, 7.5, 9}));
  EXPECT_EQ(max_pool(ramp({1, 3, 3, 1})).to_vector<float>(), (std::vector<float>{5, 6, 8, 9}));
  EXPECT_EQ(avg_pool.compute_output_shape({7, 6, 4}), (Dims{4, 3, 4}));
  EXPECT_EQ(AveragePooling2D().compute_output_shape({7, 6, 4}), (Dims{3, 3, 4}));
  EXPECT_EQ(MaxPooling2D({.pool_size = {3, 3}, .strides = {2, 1}}).compute_output_shape({7, 6, 4}), (Dims{3, 4, 4}));
}

TEST(Pooling2DTest, GradientsMatchFiniteDifferences) {
  const HostTensor x = spaced_f32({2, 5, 6, 3}, 3);  // distinct values: no ties in max windows
  MaxPooling2D max_valid;
  EXPECT_TRUE(check_layer_gradients(max_valid, x, true));
  MaxPooling2D max_same({.pool_size = {3, 3}, .strides = {1, 2}, .padding = "same"});
  EXPECT_TRUE(check_layer_gradients(max_same, x, true));
  AveragePooling2D avg_valid({.pool_size = {3, 2}, .strides = {2, 2}});
  EXPECT_TRUE(check_layer_gradients(avg_valid, x, true));
  AveragePooling2D avg_same({.pool_size = {2, 2}, .padding = "same"});
  EXPECT_TRUE(check_layer_gradients(avg_same, x, true));
  GlobalAveragePooling2D global;
  EXPECT_TRUE(check_layer_gradients(global, x, true));
}

TEST(Pooling2DTest, RejectsBadArgumentsAndInputsNamingTheLayer) {
  KILN_EXPECT_ERROR(MaxPooling2D({.data_format = "NCHW"}), ConfigError,
                    "[MaxPooling2D] data_format='NCHW' is not a Keras data format");
  KILN_EXPECT_ERROR(AveragePooling2D({.pool_size = {2, 0}}), ValueError, "pool_size to be two positive ints");
  KILN_EXPECT_ERROR(AveragePooling2D({.padding = "full"}), ValueError, "padding='full'");
  MaxPooling2D pool({.pool_size = {3, 3}, .name = "pool"});
  KILN_EXPECT_ERROR(pool(Tensor(HostTensor(Shape(DType::kF32, {4, 28, 28})))), ShapeError,
                    "[pool] expected input of shape (batch, height, width, channels)");
  KILN_EXPECT_ERROR(pool(Tensor(HostTensor(Shape(DType::kF32, {4, 2, 8, 1})))), ShapeError,
                    "an output dimension would be <= 0");
  KILN_EXPECT_ERROR(GlobalAveragePooling2D({.data_format = "NHWC"}), ConfigError,
                    "\"channels_last\" (NHWC) or \"channels_first\" (NCHW)");
}

TEST(Pooling2DTest, ConfigsAreTfKerasJsonAndRoundTrip) {
  MaxPooling2D max_pool;
  max_pool.set_name("max_pooling2d");
  const std::string config = max_pool.get_config();
  EXPECT_EQ(config, R"({"data_format":"channels_last","dtype":"float32","name":"max_pooling2d",)"
                    R"("padding":"valid","pool_size":[2,2],"strides":[2,2],"trainable":true})");
  EXPECT_EQ(layer_from_config("MaxPooling2D", config)->get_config(), config);
  AveragePooling2D avg_pool({.pool_size = {3, 2}, .strides = {1, 2}, .padding = "same", .name = "avg"});
  LayerHandle avg_copy = layer_from_config("AveragePooling2D", avg_pool.get_config());
  EXPECT_EQ(avg_copy->class_name(), "AveragePooling2D");
  EXPECT_EQ(avg_copy->get_config(), avg_pool.get_config());
  // Keras writes strides=null for "same as pool_size" and accepts single ints.
  LayerHandle keras_style = layer_from_config("MaxPooling2D", R"({"pool_size":3,"strides":null})");
  EXPECT_EQ(keras_style->compute_output_shape({9, 9, 2}), (Dims{3, 3, 2}));
}

TEST(GlobalAveragePooling2DTest, AveragesHeightAndWidthPerChannel) {
  GlobalAveragePooling2D pool;
  // x[0, :, :, c] = {1 + c, 4 + c, 7 + c, 10 + c}: means 5.5, 6.5, 7.5.
  EXPECT_EQ(pool(ramp({1, 2, 2, 3})).to_vector<float>(), (std::vector<float>{5.5, 6.5, 7.5}));
  EXPECT_EQ(pool.compute_output_shape({7, 5, 3}), (Dims{3}));
  GlobalAveragePooling2D keep({.keepdims = true});
  EXPECT_EQ(keep(ramp({2, 2, 2, 3})).dims(), (Dims{2, 1, 1, 3}));
  EXPECT_EQ(keep.compute_output_shape({7, 5, 3}), (Dims{1, 1, 3}));
  keep.set_name("global_average_pooling2d");
  const std::string config = keep.get_config();
  EXPECT_EQ(config, R"({"data_format":"channels_last","dtype":"float32","keepdims":true,)"
                    R"("name":"global_average_pooling2d","trainable":true})");
  EXPECT_EQ(layer_from_config("GlobalAveragePooling2D", config)->get_config(), config);
  Sequential model({Conv2D(4, 3, {.input_shape = {8, 8, 2}}), GlobalAveragePooling2D(), Dense(2)});
  EXPECT_NE(model.summary_text().find("global_average_pooling2d (Gl (None, 4)"), std::string::npos);
  EXPECT_EQ(model.count_params(), 3 * 3 * 2 * 4 + 4 + 4 * 2 + 2);
}

}  // namespace
}  // namespace kiln::keras
