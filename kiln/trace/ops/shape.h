// Shape and index ops on Tensors: reshape, transpose, broadcasting, slicing, concatenation,
// padding, iota, gather (take) and scatter_add. Axes may be negative (counted from the end).
#pragma once

#include <vector>

#include "kiln/ir/attrs.h"
#include "kiln/trace/tensor.h"

namespace kiln {

/// Same elements, new dims; one entry may be -1 (inferred).
Tensor reshape(const Tensor& x, Dims dims);
/// Result dim i is x's dim permutation[i]; an empty permutation reverses the dims.
Tensor transpose(const Tensor& x, Dims permutation = {});
/// NumPy broadcast of x to `dims` (dims right-aligned; x's dims must be equal or 1).
Tensor broadcast_to(const Tensor& x, const Dims& dims);
/// The IR op: operand dim i becomes result dim broadcast_dims[i].
Tensor broadcast_in_dim(const Tensor& x, Dims dims, Dims broadcast_dims);
/// Inserts a size-1 dim at `axis`; removes size-1 dim `axis`.
Tensor expand_dims(const Tensor& x, int axis);
Tensor squeeze(const Tensor& x, int axis);
/// x[starts:limits:strides] per dim (strides default to 1).
Tensor slice(const Tensor& x, Dims starts, Dims limits, Dims strides = {});
/// Joins tensors along `axis`.
Tensor concat(const std::vector<Tensor>& xs, int axis);
/// Pads each dim with low[i] and high[i] copies of `value` (negative amounts crop).
Tensor pad(const Tensor& x, Dims low, Dims high, double value = 0.0);
/// A tensor of `shape` counting 0, 1, ... along `axis`.
Tensor iota(const Shape& shape, int axis);
/// Rows of `x` along `axis` picked by integer `indices` (jnp.take); out-of-range indices clamp.
/// Result dims: x.dims[:axis] + indices.dims + x.dims[axis+1:].
Tensor take(const Tensor& x, const Tensor& indices, int axis = 0);
Tensor gather(const Tensor& x, const Tensor& indices, int axis = 0);
/// x with `updates` added at `indices` along `axis` (updates has take's result shape).
Tensor scatter_add(const Tensor& x, const Tensor& indices, const Tensor& updates, int axis = 0);

/// The box of `sizes` of x at the integer scalar `starts` (one per dim), clamped so the box
/// fits (jax.lax.dynamic_slice).
Tensor dynamic_slice(const Tensor& x, const std::vector<Tensor>& starts, Dims sizes);
/// x with `update` written at the integer scalar `starts`, clamped so it fits
/// (jax.lax.dynamic_update_slice).
Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& starts);

}  // namespace kiln
