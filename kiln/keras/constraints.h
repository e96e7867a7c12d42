// Weight constraints (keras.constraints): a projection applied to a weight after each
// optimizer step (MaxNorm, NonNeg, UnitNorm, MinMaxNorm).
#pragma once

#include <string>
#include <vector>

#include "kiln/trace/tensor.h"

namespace kiln::keras {

/// A Keras constraint by snake_case name with its arguments (Keras's defaults):
///   max_norm:     w * clip(n, 0, max_value) / (eps + n)
///   non_neg:      w * (w >= 0)
///   unit_norm:    w / (eps + n)
///   min_max_norm: w * (rate * clip(n, min_value, max_value) + (1 - rate) * n) / (eps + n)
/// with n = sqrt(sum(w^2, axis, keepdims)) and eps = 1e-7 (Keras's epsilon).
///   Dense(64, {.kernel_constraint = Constraint{.name = "max_norm", .max_value = 3}})
struct Constraint {
  std::string name = "max_norm";
  double max_value = 2.0;  // max_norm's default; min_max_norm's is 1 (from_config sets it)
  double min_value = 0.0;
  double rate = 1.0;
  std::vector<int> axis = {0};

  /// The constrained value of `w`.
  Tensor operator()(const Tensor& w) const;
  /// "MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm".
  std::string class_name() const;
  std::string config_json() const;
  /// Every form Keras 2.x and 3 wrote (MaxNorm / max_norm / maxnorm, ...); ConfigError
  /// naming an unknown class or key.
  static Constraint from_config(const std::string& class_name, const std::string& config_json = "{}");
};

}  // namespace kiln::keras
