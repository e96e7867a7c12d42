// Philox-4x32-10, the counter-based generator of Salmon et al., "Parallel Random Numbers: As
// Easy as 1, 2, 3" (SC'11, Random123). Every backend's rng_bits kernel calls these functions,
// so random bits are bit-identical across backends, thread counts and restarts.
#pragma once

#include <array>
#include <cstdint>

namespace kiln {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

namespace detail {

inline constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
inline constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;  // golden ratio
inline constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;  // sqrt(3) - 1

constexpr PhiloxCounter philox_round(const PhiloxCounter& c, const PhiloxKey& k) {
  const uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * c[0];
  const uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * c[2];
  const auto hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
  const auto hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
  return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}

}  // namespace detail

/// Philox-4x32 with 10 rounds: 128 random bits from a 128-bit counter and a 64-bit key.
constexpr PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += detail::kPhiloxW0;
      key[1] += detail::kPhiloxW1;
    }
    counter = detail::philox_round(counter, key);
  }
  return counter;
}

/// The 32 random bits of element `index` of an rng_bits result keyed by `key` (the op's i64
/// scalar): key words = {low 32 bits, high 32 bits} of `key`, counter = {low 32 bits, high 32
/// bits of `index`, 0, 0}, result = word 0 of the Philox output. Elements are independent, so
/// any backend may compute them in any order or in parallel.
constexpr uint32_t philox_element_bits(int64_t key, int64_t index) {
  const auto k = static_cast<uint64_t>(key);
  const auto i = static_cast<uint64_t>(index);
  return philox4x32_10({static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), 0u, 0u},
                       {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)})[0];
}

}  // namespace kiln
