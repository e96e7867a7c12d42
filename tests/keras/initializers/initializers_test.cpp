// Initializers: Keras's VarianceScaling formula and the config forms Keras 2.x wrote.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kiln/keras/initializers/initializers.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

// Verify VarianceScaling with Keras's semantics: the named initializers are its presets
// (same values), and fan_out / untruncated_normal give the variance Keras's formula does.
TEST(InitializersTest, VarianceScalingIsKerasFormula) {
  const Initializer vs = Initializer::from_config(
      "VarianceScaling", R"({"scale": 1.0, "mode": "fan_avg", "distribution": "uniform", "seed": 7})");
  EXPECT_EQ(vs.name, "glorot_uniform");
  const Shape shape(DType::kF32, {300, 200});
  EXPECT_EQ(vs(shape, "k").to_vector<float>(), Initializer("glorot_uniform", 7)(shape, "k").to_vector<float>());
  EXPECT_EQ(Initializer::from_config("VarianceScaling", R"({"scale": 2.0, "mode": "fan_in", "distribution": "normal"})").name,
            "he_normal");
  const Initializer un = Initializer::from_config(
      "VarianceScaling", R"({"scale": 3.0, "mode": "fan_out", "distribution": "untruncated_normal", "seed": 1})");
  EXPECT_EQ(un.name, "variance_scaling");
  double sq = 0;
  const std::vector<float> v = un(shape, "k").to_vector<float>();
  for (float f : v) sq += double(f) * f;
  EXPECT_NEAR(sq / double(v.size()), 3.0 / 200, 3.0 / 200 * 0.03);  // var = scale / fan_out
  EXPECT_EQ(Initializer::from_config("normal").name, "random_normal");
  EXPECT_EQ(Initializer::from_config("GlorotUniform").name, "glorot_uniform");
  KILN_EXPECT_ERROR(Initializer::from_config("Orthogonal", "{}"), ConfigError, "unknown initializer class 'Orthogonal'");
}

}  // namespace
}  // namespace kiln::keras
