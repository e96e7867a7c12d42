// Rescaling: values by hand (u8 pixels and floats), its gradient, Keras 2's and Keras 3's
// configs, and a model with it saved and loaded in .h5 and .keras.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/keras/layers/layer_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using kiln::testing::random_f64;

TEST(RescalingTest, MultipliesThenAddsInTheComputeDtype) {
  // u8 pixels are cast to f32 first: 255 / 255 = 1, 51 / 255 = 0.2.
  const Tensor pixels = Tensor::from_vector<uint8_t>({1, 3}, {0, 255, 51});
  const Tensor y = Rescaling(1.0 / 255)(pixels);
  EXPECT_EQ(y.dtype(), DType::kF32);
  const std::vector<float> got = y.to_vector<float>();
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_FLOAT_EQ(got[1], 1.0f);
  EXPECT_FLOAT_EQ(got[2], 0.2f);
  // [0, 1] -> [-1, 1]: x * 2 - 1.
  EXPECT_EQ(Rescaling(2.0, -1.0)(Tensor::from_vector<float>({1, 3}, {0, 0.5, 1})).to_vector<float>(),
            (std::vector<float>{-1, 0, 1}));
  Rescaling mixed(0.5, 0.0, {.dtype = "mixed_bfloat16"});
  EXPECT_EQ(mixed(Tensor::from_vector<uint8_t>({1, 2}, {4, 8})).dtype(), DType::kBF16);
  KILN_EXPECT_ERROR(Rescaling(std::nan(""), 0.0, {.name = "r"}), ValueError, "[r] scale and offset must be finite");
}

TEST(RescalingTest, GradientIsTheScale) {
  Rescaling r(3.0, 1.0, {.dtype = "float64"});
  EXPECT_TRUE(testing::check_layer_gradients(r, random_f64({2, 4}, 1), false, testing::f64_grad_options()));
}

TEST(RescalingTest, ConfigsReadKeras2AndKeras3Forms) {
  Rescaling r(0.5, 0.25);
  r.set_name("rescaling");
  EXPECT_EQ(r.get_config(), R"({"dtype":"float32","name":"rescaling","offset":0.25,"scale":0.5,"trainable":true})");
  testing::expect_config_round_trip(r);
  const char* keras3 = R"({"name": "rescaling", "trainable": true, "dtype": {"module": "keras", "class_name":
      "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "scale": 0.00392156862745098,
      "offset": 0.0})";
  LayerHandle loaded = layer_from_config("Rescaling", keras3);
  EXPECT_FLOAT_EQ(loaded->operator()(Tensor::from_vector<float>({1, 1}, {255})).to_vector<float>()[0], 1.0f);
  KILN_EXPECT_ERROR(layer_from_config("Rescaling", R"({"scale": [[0.5], [0.5]]})"), ConfigError,
                    "flat list of numbers");
  KILN_EXPECT_ERROR(layer_from_config("Rescaling", R"({"offset": 1})"), ConfigError, "Rescaling.from_config");
}

// EfficientNet's stem with ImageNet weights: Rescaling([1 / sqrt(s) for s in stddev]) scales
// each channel of the last axis by its own value (Keras 3 and tf-keras write the list; the
// layer harness saves and loads it in a model).
TEST(RescalingTest, PerChannelScalesAndOffsets) {
  const Tensor x = Tensor::from_vector<float>({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(Rescaling({2.0, 0.5, -1.0}, {0.0})(x).to_vector<float>(), (std::vector<float>{2, 1, -3, 8, 2.5, -6}));
  EXPECT_EQ(Rescaling({1.0}, {10.0, 20.0, 30.0})(x).to_vector<float>(), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  Rescaling per_channel({0.25, 0.5, 1.0}, {0.0});
  per_channel.set_name("rescaling_1");
  EXPECT_EQ(per_channel.get_config(),
            R"({"dtype":"float32","name":"rescaling_1","offset":0.0,"scale":[0.25,0.5,1.0],"trainable":true})");
  testing::expect_config_round_trip(per_channel);
  const char* keras3 = R"({"name": "rescaling_1", "trainable": true, "dtype": "float32",
      "scale": [2.0896918976428642, 2.1128856368212916, 2.1081851067789197], "offset": 0.0})";
  const std::vector<float> y =
      (*layer_from_config("Rescaling", keras3))(Tensor::from_vector<float>({1, 3}, {1, 1, 1})).to_vector<float>();
  EXPECT_FLOAT_EQ(y[0], static_cast<float>(1 / std::sqrt(0.229)));
  EXPECT_FLOAT_EQ(y[2], static_cast<float>(1 / std::sqrt(0.225)));
  KILN_EXPECT_ERROR(Rescaling({1.0, 2.0}, {0.0}, {.name = "r"})(x), ShapeError, "need an input whose last axis has 2");
}

}  // namespace
}  // namespace kiln::keras
