// IEEE binary16 conversions (bf16 is inline in half.h: it is a plain truncation with rounding).
#include "kiln/core/half.h"

namespace kiln {

uint16_t f32_to_f16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u)  // NaN: keep the top payload bits, force the quiet bit
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u)  // rounds to >= 65520: overflow to infinity (also f32 inf)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs < 0x38800000u) {  // below 2^-14: f16 subnormal or zero
    if (abs < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25): zero
    // Shift the 24-bit significand into the subnormal position with RNE.
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exp;  // exp 113 (2^-14) -> shift 13 gives the top subnormal
    uint32_t half_mant = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even.
  uint32_t h = abs - 0x38000000u;
  h += 0x0fffu + ((h >> 13) & 1u);
  return static_cast<uint16_t>(sign | (h >> 13));
}

float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    u = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    u = sign;
  } else {  // subnormal: normalize
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    u = sign | ((112u - static_cast<uint32_t>(e)) << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace kiln
