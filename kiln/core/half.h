// Exact 16-bit float conversions: bfloat16 and IEEE half <-> f32, round to nearest even,
// NaN stays NaN (quieted) and infinities stay infinities.
#pragma once

#include <cstdint>
#include <cstring>

#include "kiln/core/dtype.h"

namespace kiln {

/// f32 -> bf16 bits, round to nearest even.
inline uint16_t f32_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)  // NaN: keep sign and top payload, force quiet bit
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// bf16 bits -> f32 (exact).
inline float bf16_bits_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// f32 -> IEEE binary16 bits, round to nearest even (subnormals and overflow handled).
uint16_t f32_to_f16_bits(float f);
/// IEEE binary16 bits -> f32 (exact).
float f16_bits_to_f32(uint16_t h);

/// bfloat16 value type: storage only; arithmetic happens in f32.
struct BF16 {
  uint16_t bits = 0;
  BF16() = default;
  explicit BF16(float f) : bits(f32_to_bf16_bits(f)) {}
  explicit operator float() const { return bf16_bits_to_f32(bits); }
  static BF16 from_bits(uint16_t b) { BF16 x; x.bits = b; return x; }
};

/// IEEE half value type: storage only; arithmetic happens in f32.
struct F16 {
  uint16_t bits = 0;
  F16() = default;
  explicit F16(float f) : bits(f32_to_f16_bits(f)) {}
  explicit operator float() const { return f16_bits_to_f32(bits); }
  static F16 from_bits(uint16_t b) { F16 x; x.bits = b; return x; }
};

}  // namespace kiln

namespace kiln {
template <> struct DTypeOf<BF16> { static constexpr DType value = DType::kBF16; };
template <> struct DTypeOf<F16> { static constexpr DType value = DType::kF16; };
}  // namespace kiln
