// Policy: the dtype policy of a Keras layer (keras.mixed_precision.Policy; Keras 3's
// DTypePolicy): the dtype a layer computes in and the dtype its variables are kept in, plus the
// global policy new layers take when they are given none. It lives in its own folder because
// Keras's mixed_precision module is its own namespace (kiln::keras::mixed_precision).
#pragma once

#include <string>
#include <vector>

#include "kiln/core/dtype.h"

namespace kiln::keras::mixed_precision {

/// A named pair (compute dtype, variable dtype). "mixed_bfloat16" computes in bfloat16 and
/// keeps variables in float32; "float32" / "float64" / "bfloat16" / "float16" use that one
/// dtype for both. Layers cast their floating inputs and variables to compute_dtype() (Keras's
/// autocast); statistics (BatchNormalization, LayerNormalization), softmax and losses stay in
/// float32.
class Policy {
 public:
  /// "float32".
  Policy() : Policy("float32") {}
  /// ValueError naming the known policies when `name` is not one of them.
  Policy(const std::string& name);  // NOLINT: a name stands for its policy, as in Keras
  Policy(const char* name) : Policy(std::string(name)) {}  // NOLINT

  const std::string& name() const { return name_; }
  DType compute_dtype() const { return compute_dtype_; }
  DType variable_dtype() const { return variable_dtype_; }
  /// True when the two dtypes differ (the "mixed_" policies).
  bool is_mixed() const { return compute_dtype_ != variable_dtype_; }
  bool operator==(const Policy& other) const { return name_ == other.name_; }

  /// The names Policy accepts, in Keras's documentation order.
  static const std::vector<std::string>& known_names();

 private:
  std::string name_;
  DType compute_dtype_ = DType::kF32;
  DType variable_dtype_ = DType::kF32;
};

/// The policy layers take when their options name none (Keras's
/// keras.mixed_precision.set_global_policy). Layers read it when they are made, so set it
/// before building the model. Process-wide like Keras's; the one piece of global mutable state
/// in keras/ besides the strategy stack (ARCHITECTURE.md).
void set_global_policy(const Policy& policy);
Policy global_policy();

}  // namespace kiln::keras::mixed_precision
