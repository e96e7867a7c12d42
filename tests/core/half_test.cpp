#include "kiln/core/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace kiln {
namespace {

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(HalfTest, EveryBF16BitPatternRoundTrips) {
  for (uint32_t b = 0; b < 65536; ++b) {
    float f = bf16_bits_to_f32(static_cast<uint16_t>(b));
    uint16_t back = f32_to_bf16_bits(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_bits_to_f32(back))) << b;
      EXPECT_EQ(back & 0x8000, b & 0x8000) << "NaN sign kept, pattern " << b;
    } else {
      EXPECT_EQ(back, b) << "pattern " << b;
    }
  }
}

TEST(HalfTest, F32ToBF16RoundsTiesToEven) {
  // 1 + 2^-8 lies exactly between bf16 1.0 (0x3f80) and 1.0078125 (0x3f81): even wins.
  EXPECT_EQ(f32_to_bf16_bits(float_of(0x3f808000u)), 0x3f80);
  // 1.0078125 + 2^-8: between 0x3f81 and 0x3f82: even (0x3f82) wins.
  EXPECT_EQ(f32_to_bf16_bits(float_of(0x3f818000u)), 0x3f82);
  // Just above and below a tie go to the nearer neighbour.
  EXPECT_EQ(f32_to_bf16_bits(float_of(0x3f808001u)), 0x3f81);
  EXPECT_EQ(f32_to_bf16_bits(float_of(0x3f807fffu)), 0x3f80);
  // Negative ties too.
  EXPECT_EQ(f32_to_bf16_bits(float_of(0xbf808000u)), 0xbf80);
  // The largest finite float rounds up to infinity; infinities and NaNs stay.
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(f32_to_bf16_bits(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_TRUE(std::isnan(bf16_bits_to_f32(f32_to_bf16_bits(std::nanf("")))));
  // A NaN whose payload sits only in the low bits must not become infinity.
  EXPECT_TRUE(std::isnan(bf16_bits_to_f32(f32_to_bf16_bits(float_of(0x7f800001u)))));
}

TEST(HalfTest, EveryF16BitPatternRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = f16_bits_to_f32(static_cast<uint16_t>(h));
    uint16_t back = f32_to_f16_bits(f);
    if (std::isnan(f))
      EXPECT_TRUE(std::isnan(f16_bits_to_f32(back))) << h;
    else
      EXPECT_EQ(back, h) << "pattern " << h;
  }
}

TEST(HalfTest, F16KnownValues) {
  EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16_bits(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16_bits(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7c00);  // the tie above the max goes to infinity
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: zero
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(3.0f, -25)), 0x0002);  // tie to even: two
  EXPECT_EQ(f32_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(f32_to_f16_bits(1.0f + std::ldexp(3.0f, -11)), 0x3c02);
  EXPECT_EQ(f32_to_f16_bits(-0.0f), 0x8000);
}

// Property: the conversion picks a nearest f16, for random floats across the whole range.
TEST(HalfTest, F32ToF16PicksANearestValue) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> exponent(-27.0f, 16.5f);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  for (int i = 0; i < 200000; ++i) {
    float f = std::ldexp(mantissa(rng), static_cast<int>(exponent(rng)));
    if (i % 2) f = -f;
    uint16_t h = f32_to_f16_bits(f);
    double v = f16_bits_to_f32(h);
    if (std::isinf(v)) {
      EXPECT_GE(std::fabs(f), 65520.0f);
      continue;
    }
    double err = std::fabs(double(f) - v);
    for (int delta : {-1, 1}) {
      uint16_t n = static_cast<uint16_t>(h + delta);
      if ((n & 0x7fff) >= 0x7c00 || ((h & 0x7fff) == 0 && delta < 0)) continue;
      EXPECT_LE(err, std::fabs(double(f) - f16_bits_to_f32(n))) << f;
    }
  }
}

TEST(HalfTest, ValueTypesConvertBothWays) {
  EXPECT_EQ(static_cast<float>(BF16(3.0f)), 3.0f);
  EXPECT_EQ(static_cast<float>(F16(0.5f)), 0.5f);
  EXPECT_EQ(BF16::from_bits(0x3f80).bits, 0x3f80);
}

}  // namespace
}  // namespace kiln
