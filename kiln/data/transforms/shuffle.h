// shuffle: a uniform shuffle through a bounded buffer, reproducible from a seed.
#pragma once

#include "kiln/data/dataset.h"

namespace kiln::data {

/// The recipe step of Dataset::shuffle (see there). Without a seed one is drawn here, once,
/// so every iterator of the recipe agrees.
NodePtr make_shuffle_node(NodePtr input, int64_t buffer_size, std::optional<uint64_t> seed,
                          bool reshuffle_each_iteration);

/// SplitMix64: a 64-bit-state generator whose whole state is one integer, so saving a
/// shuffle's RNG is writing one number.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n); the modulo bias is below n / 2^64, far under any test's resolution.
  uint64_t below(uint64_t n) { return next() % n; }
  uint64_t state() const { return state_; }
  void set_state(uint64_t s) { state_ = s; }

 private:
  uint64_t state_;
};

}  // namespace kiln::data
