// How the seed models cast for a mixed-precision step, written by hand until the Keras dtype
// policy (issue 16, keras::mixed_precision) builds these programs itself: a layer casts its
// input, kernel and bias to the compute dtype (variables stay f32, the cast's gradient casts
// back to f32), and the logits return to f32 before the loss, as a Keras `mixed_bfloat16`
// Dense does. Shared by the e2e tests and the benches, so the lead can swap this one function
// for the Policy.
#pragma once

#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/tensor.h"

namespace kiln::testing {

/// `x` in the layer's compute dtype (`x` itself when it already is).
inline Tensor to_compute(const Tensor& x, DType compute) { return x.dtype() == compute ? x : cast(x, compute); }

}  // namespace kiln::testing
