// Kiln's f32 exp, tanh and log (core/float_math.h) against libm's f64 functions rounded to f32
// (the correctly rounded result but for rare double-rounding ties): at most 1 ulp anywhere
// over a stride through every f32 bit pattern, almost always exact, and IEEE's special values.
#include "kiln/core/float_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace kiln::float_math {
namespace {

// Distance in representable f32 values; NaN matches only NaN.
int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<int32_t>::max();
  auto ordered = [](float f) {
    const int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? int64_t{std::numeric_limits<int32_t>::min()} - i : int64_t{i};
  };
  return std::llabs(ordered(a) - ordered(b));
}

struct Sweep {
  int64_t values = 0, inexact = 0, worst_ulps = 0;
  float worst_at = 0;
};

template <typename Kiln, typename Libm>
Sweep sweep(Kiln kiln, Libm libm) {
  Sweep s;
  // A prime stride visits every exponent and sign with varied mantissas: ~29 million values.
  for (uint64_t u = 0; u <= 0xffffffffULL; u += 149) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(u));
    const int64_t d = ulp_distance(kiln(x), static_cast<float>(libm(static_cast<double>(x))));
    ++s.values;
    if (d != 0) ++s.inexact;
    if (d > s.worst_ulps) {
      s.worst_ulps = d;
      s.worst_at = x;
    }
  }
  return s;
}

void expect_accurate(const char* name, const Sweep& s) {
  SCOPED_TRACE(name);
  EXPECT_GT(s.values, 28'000'000);
  EXPECT_LE(s.worst_ulps, 1) << "worst at " << s.worst_at;
  EXPECT_LE(s.inexact, 10) << "of " << s.values << " values differ from the correctly rounded result";
}

TEST(FloatMathTest, ExpIsWithinOneUlpOfTheCorrectlyRoundedValueAndAlmostAlwaysExact) {
  expect_accurate("exp", sweep([](float x) { return float_math::exp(x); }, [](double x) { return std::exp(x); }));
}

TEST(FloatMathTest, TanhIsWithinOneUlpOfTheCorrectlyRoundedValueAndAlmostAlwaysExact) {
  expect_accurate("tanh", sweep([](float x) { return float_math::tanh(x); }, [](double x) { return std::tanh(x); }));
}

TEST(FloatMathTest, LogIsWithinOneUlpOfTheCorrectlyRoundedValueAndAlmostAlwaysExact) {
  expect_accurate("log", sweep([](float x) { return float_math::log(x); }, [](double x) { return std::log(x); }));
}

TEST(FloatMathTest, SpecialValuesFollowIeee) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(float_math::exp(0.0f), 1.0f);
  EXPECT_EQ(float_math::exp(-0.0f), 1.0f);
  EXPECT_EQ(float_math::exp(inf), inf);
  EXPECT_EQ(float_math::exp(-inf), 0.0f);
  EXPECT_TRUE(std::isnan(float_math::exp(nan)));
  auto libm_exp = [](float x) { return static_cast<float>(std::exp(static_cast<double>(x))); };
  EXPECT_EQ(float_math::exp(88.7f), libm_exp(88.7f));  // near the largest finite value
  EXPECT_TRUE(std::isfinite(float_math::exp(88.7f)));
  EXPECT_EQ(float_math::exp(88.73f), inf);  // overflow
  const float subnormal = float_math::exp(-100.0f);
  EXPECT_EQ(subnormal, libm_exp(-100.0f));
  EXPECT_GT(subnormal, 0.0f);
  EXPECT_LT(subnormal, std::numeric_limits<float>::min());
  EXPECT_EQ(float_math::exp(-104.0f), 0.0f);             // underflow
  EXPECT_EQ(float_math::exp(1e30f), inf);                // beyond the clamp
  EXPECT_EQ(float_math::exp(-1e30f), 0.0f);

  EXPECT_EQ(std::bit_cast<uint32_t>(float_math::tanh(-0.0f)), std::bit_cast<uint32_t>(-0.0f));
  EXPECT_EQ(float_math::tanh(tiny), tiny);
  EXPECT_EQ(float_math::tanh(1e-20f), 1e-20f);
  EXPECT_EQ(float_math::tanh(inf), 1.0f);
  EXPECT_EQ(float_math::tanh(-inf), -1.0f);
  EXPECT_EQ(float_math::tanh(9.5f), 1.0f);
  EXPECT_TRUE(std::isnan(float_math::tanh(nan)));

  EXPECT_EQ(float_math::log(1.0f), 0.0f);
  EXPECT_EQ(float_math::log(0.0f), -inf);
  EXPECT_EQ(float_math::log(-0.0f), -inf);
  EXPECT_EQ(float_math::log(inf), inf);
  EXPECT_TRUE(std::isnan(float_math::log(-1.0f)));
  EXPECT_TRUE(std::isnan(float_math::log(-inf)));
  EXPECT_TRUE(std::isnan(float_math::log(nan)));
  EXPECT_EQ(float_math::log(tiny), static_cast<float>(std::log(static_cast<double>(tiny))));
  EXPECT_EQ(float_math::log(std::numeric_limits<float>::max()),
            static_cast<float>(std::log(static_cast<double>(std::numeric_limits<float>::max()))));

  EXPECT_EQ(float_math::logistic(0.0f), 0.5f);
  EXPECT_EQ(float_math::logistic(inf), 1.0f);
  EXPECT_EQ(float_math::logistic(-inf), 0.0f);
  EXPECT_EQ(float_math::logistic(-200.0f), 0.0f);
}

TEST(FloatMathTest, F64ValuesKeepLibm) {
  for (double x : {-3.5, -0.25, 0.0, 0.75, 12.0}) {
    EXPECT_EQ(float_math::exp(x), std::exp(x));
    EXPECT_EQ(float_math::tanh(x), std::tanh(x));
    EXPECT_EQ(float_math::logistic(x), 1.0 / (1.0 + std::exp(-x)));
  }
  EXPECT_EQ(float_math::log(2.5), std::log(2.5));
}

}  // namespace
}  // namespace kiln::float_math
