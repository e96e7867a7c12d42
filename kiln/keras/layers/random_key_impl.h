// Internal to keras/layers: the per-step random key of the layers that draw random numbers
// in training (Dropout, SpatialDropout2D, GaussianNoise). A step counter Variable (not a
// weight; checkpoints keep it) is mixed with the seed, so runs repeat and each step differs.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/variable.h"

namespace kiln::keras::internal {

/// The counter a random layer creates in build (i64 scalar, starting at 0).
inline Variable make_seed_state(const std::string& layer) {
  return Variable(layer + "/seed_state", HostTensor(Shape(DType::kI64, {})), /*trainable=*/false);
}

/// Advances `counter` and returns this step's Philox key. Distinct (seed, step) pairs give
/// distinct keys: key = step * 2^20 + seed mod 2^20; an unseeded layer uses its name's hash.
inline Tensor next_random_key(const Variable& counter, const std::optional<uint64_t>& seed, const std::string& layer) {
  const uint64_t s = seed ? *seed : std::hash<std::string>{}(layer);
  Tensor step = counter.read() + 1.0;
  counter.assign(step);
  return step * static_cast<double>(1 << 20) + static_cast<double>(s % (1u << 20));
}

}  // namespace kiln::keras::internal
