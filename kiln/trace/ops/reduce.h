// Reductions over axes (sum, max, min, mean) and argmax. `axes` may be negative and in any
// order; the overloads without axes reduce everything. keepdims keeps reduced dims as size 1.
#pragma once

#include <vector>

#include "kiln/trace/tensor.h"

namespace kiln {

Tensor reduce_sum(const Tensor& x);
Tensor reduce_sum(const Tensor& x, std::vector<int> axes, bool keepdims = false);
Tensor reduce_max(const Tensor& x);
Tensor reduce_max(const Tensor& x, std::vector<int> axes, bool keepdims = false);
Tensor reduce_min(const Tensor& x);
Tensor reduce_min(const Tensor& x, std::vector<int> axes, bool keepdims = false);
/// Sum divided by the number of reduced elements (floating-point x).
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, std::vector<int> axes, bool keepdims = false);
/// Index (i32) of the first maximum along `axis`, which disappears.
Tensor argmax(const Tensor& x, int axis = -1);

namespace trace {
/// Sorted, non-negative, distinct axes; ShapeError naming `op` otherwise.
Dims normalize_axes(const Shape& shape, const std::vector<int>& axes, const char* op);
/// `reduced` (x reduced over `axes`) broadcast back to x's dims (the keepdims shape expanded).
Tensor unreduce(const Tensor& reduced, const Dims& x_dims, const Dims& axes);
}  // namespace trace

}  // namespace kiln
