// Weight regularizers (keras.regularizers): L1L2 and its L1 / L2 forms, a penalty on a
// weight that the Trainer's train step adds to the loss.
#pragma once

#include <string>

#include "kiln/trace/tensor.h"

namespace kiln::keras {

/// penalty(w) = l1 * sum(|w|) + l2 * sum(w^2) (Keras's L1L2; L1 and L2 set one factor).
///   Dense(64, {.kernel_regularizer = Regularizer{.l2 = 1e-4}})
struct Regularizer {
  double l1 = 0.0;
  double l2 = 0.0;

  /// The penalty of `w` (an f32 scalar).
  Tensor operator()(const Tensor& w) const;
  /// Keras's class name for the factors set: "L1", "L2" or "L1L2".
  std::string class_name() const;
  /// {"l1": ..., "l2": ...} (only the factor of L1 or L2).
  std::string config_json() const;
  /// Every form Keras 2.x and 3 wrote: L1L2, L1, L2 (class names or Keras's snake_case names
  /// "l1", "l2", "l1_l2", which default to 0.01) with their configs. ConfigError otherwise.
  static Regularizer from_config(const std::string& class_name, const std::string& config_json = "{}");
};

}  // namespace kiln::keras
