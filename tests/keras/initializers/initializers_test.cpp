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
  KILN_EXPECT_ERROR(Initializer::from_config("Identity", "{}"), ConfigError, "unknown initializer class 'Identity'");
}

// Keras's Orthogonal: the shorter side orthonormal (times gain), for tall and wide shapes.
TEST(InitializersTest, OrthogonalIsOrthonormalTimesGain) {
  const Initializer init = Initializer::from_config("Orthogonal", R"({"gain": 2.0, "seed": 3})");
  EXPECT_EQ(init.name, "orthogonal");
  EXPECT_EQ(init.config_json(), R"({"gain":2.0,"seed":3})");
  for (const Dims& dims : {Dims{6, 2}, Dims{3, 5}, Dims{2, 2, 4}}) {
    const std::vector<float> v = init(Shape(DType::kF32, dims), "w").to_vector<float>();
    const int64_t cols = dims.back(), rows = static_cast<int64_t>(v.size()) / cols;
    const bool wide = rows < cols;
    const int64_t k = wide ? rows : cols, n = wide ? cols : rows;
    auto at = [&](int64_t vec, int64_t i) { return double(v[size_t(wide ? vec * cols + i : i * cols + vec)]); };
    for (int64_t a = 0; a < k; ++a)
      for (int64_t b = 0; b < k; ++b) {
        double dot = 0;
        for (int64_t i = 0; i < n; ++i) dot += at(a, i) * at(b, i);
        EXPECT_NEAR(dot, a == b ? 4.0 : 0.0, 1e-5) << dims.size() << " " << a << " " << b;
      }
  }
  KILN_EXPECT_ERROR(Initializer("orthogonal")(Shape(DType::kF32, {4}), "w"), ValueError, "rank >= 2");
}

}  // namespace
}  // namespace kiln::keras
