// Rescaling: values by hand (u8 pixels and floats), its gradient, Keras 2's and Keras 3's
// configs, and a model with it saved and loaded in .h5 and .keras.
#include <gtest/gtest.h>

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
  KILN_EXPECT_ERROR(layer_from_config("Rescaling", R"({"scale": [0.5, 0.5, 0.5]})"), ConfigError,
                    "one scale for every channel");
  KILN_EXPECT_ERROR(layer_from_config("Rescaling", R"({"offset": 1})"), ConfigError, "Rescaling.from_config");
}

}  // namespace
}  // namespace kiln::keras
