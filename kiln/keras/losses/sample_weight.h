// Sample weights shaped like the per-sample values they weigh (Keras's losses_utils
// squeeze_or_expand_dimensions, then a broadcast); shared by the losses and the metrics.
#pragma once

#include <string>

#include "kiln/trace/tensor.h"

namespace kiln::keras {

/// `sample_weight` as f32 with the dims of `values`: a weight with one axis fewer gains a
/// trailing axis, one with a trailing axis of 1 more loses it, and the result must then
/// broadcast. A mask (batch, T) weighs the per-step losses (batch, T) of a sequence output.
/// `where` (the loss or metric) names the error when the shapes do not fit.
Tensor broadcast_weights(const Tensor& sample_weight, const Shape& values, const std::string& where);

}  // namespace kiln::keras
