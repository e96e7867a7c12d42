// The seed of tf.image's stateless random ops (stateless_random_flip_left_right and friends):
// two integers, as TF's shape-[2] seed. The same seed gives the same result in any run, on
// any thread, with any replica count; to vary an op per element, pass a seed that identifies
// the element (its index, or a pair from the pipeline).
#pragma once

#include <array>
#include <cstdint>

#include "kiln/core/rng.h"

namespace kiln::data {

/// TF's stateless seed: {seed0, seed1}.
using StatelessSeed = std::array<int64_t, 2>;

/// Draw `index` of the stream `seed` names, uniform in [0, 1) with 24 random bits: Philox-4x32
/// keyed by seed[0], counting {index, seed[1]} (kiln/core/rng.h).
inline float stateless_uniform(const StatelessSeed& seed, uint64_t index) {
  const auto k = static_cast<uint64_t>(seed[0]), s = static_cast<uint64_t>(seed[1]);
  const uint32_t bits = philox4x32_10({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                                       static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32)},
                                      {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)})[0];
  return static_cast<float>(bits >> 8) * 0x1.0p-24f;
}

}  // namespace kiln::data
