// What Keras's random image preprocessing layers share (RandomFlip, RandomCrop, RandomContrast,
// RandomBrightness, RandomRotation, RandomZoom, RandomTranslation): a seed, a step counter
// mixed into it (as Dropout's, so runs repeat, each step differs and a resumed run draws the
// same numbers), channels_last images (height, width, channels) per example, and the identity
// at inference.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

/// A Keras `factor` argument: one number, or a (lower, upper) pair. Each layer says what a
/// single number means (RandomRotation(0.2): [-0.2, 0.2]; RandomContrast(0.2): [0.8, 1.2]).
struct Factor {
  Factor(double value) : lower(value), upper(value), single(true) {}  // NOLINT: Keras's float form
  Factor(double low, double high) : lower(low), upper(high), single(false) {}
  double lower;
  double upper;
  bool single;
};

/// The base of the random image layers.
class RandomImageLayer : public Layer {
 public:
  std::vector<Variable> random_state() const override;
  const std::optional<uint64_t>& seed() const { return seed_; }

 protected:
  RandomImageLayer(std::optional<uint64_t> seed, std::string name, Dims input_shape,
                   const std::optional<mixed_precision::Policy>& dtype);
  /// Checks (height, width, channels) input and makes the step counter.
  void build_weights(const Dims& input_shape) override;
  /// This step's Philox key (advances the counter).
  Tensor next_key();
  /// x in the compute dtype (Keras casts any input, u8 pixels included).
  Tensor cast_input(const Tensor& x) const;

 private:
  std::optional<uint64_t> seed_;
  Variable counter_;  // the step counter mixed into the key; not a weight
};

}  // namespace kiln::keras
