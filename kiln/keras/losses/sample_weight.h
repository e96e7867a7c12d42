// Labels and sample weights shaped like the values they meet (Keras's
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

/// `y_true` with y_pred's rank where tf.keras 2's match_dtype_and_rank and Keras 3's
/// squeeze_or_expand_to_same_rank agree: labels (batch,) against a prediction (batch, 1) gain
/// its axis, so they do not broadcast to (batch, batch). Otherwise `y_true` as it is.
Tensor label_like(const Tensor& y_true, const Tensor& y_pred);

}  // namespace kiln::keras
