// Reductions: axis normalization, keepdims reshapes, and mean as sum / count.
#include "kiln/trace/ops/reduce.h"

#include <algorithm>

#include "kiln/trace/emit.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/shape.h"

namespace kiln {
namespace trace {

Dims normalize_axes(const Shape& shape, const std::vector<int>& axes, const char* op) {
  Dims out;
  for (int a : axes) {
    if (a < -shape.rank() || a >= shape.rank())
      KILN_THROW(ShapeError, "[", where(op), "] axis ", a, " is out of range for ", shape,
                 ": expected axes in [", -shape.rank(), ", ", shape.rank() - 1, "].");
    out.push_back(a < 0 ? a + shape.rank() : a);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    KILN_THROW(ShapeError, "[", where(op), "] repeated axis in ", dims_to_string(out), ".");
  return out;
}

Tensor unreduce(const Tensor& reduced, const Dims& x_dims, const Dims& axes) {
  Dims kept;
  for (int64_t i = 0; i < static_cast<int64_t>(x_dims.size()); ++i)
    if (!std::binary_search(axes.begin(), axes.end(), i)) kept.push_back(i);
  return broadcast_in_dim(reduced, x_dims, kept);
}

}  // namespace trace

namespace {

std::vector<int> all_axes(const Tensor& x) {
  std::vector<int> axes(static_cast<size_t>(x.rank()));
  for (int i = 0; i < x.rank(); ++i) axes[static_cast<size_t>(i)] = i;
  return axes;
}

Tensor reduce(ir::Opcode op, const Tensor& x, const std::vector<int>& axes, bool keepdims) {
  Dims norm = trace::normalize_axes(x.shape(), axes, ir::opcode_name(op).data());
  if (norm.empty()) return x;
  ir::Attrs a;
  a.dims = norm;
  Tensor r = trace::emit(op, {x}, std::move(a));
  if (!keepdims) return r;
  Dims kept = x.dims();
  for (int64_t i : norm) kept[static_cast<size_t>(i)] = 1;
  return reshape(r, kept);
}

}  // namespace

Tensor reduce_sum(const Tensor& x) { return reduce_sum(x, all_axes(x)); }
Tensor reduce_sum(const Tensor& x, std::vector<int> axes, bool keepdims) {
  return reduce(ir::Opcode::kReduceSum, x, axes, keepdims);
}
Tensor reduce_max(const Tensor& x) { return reduce_max(x, all_axes(x)); }
Tensor reduce_max(const Tensor& x, std::vector<int> axes, bool keepdims) {
  return reduce(ir::Opcode::kReduceMax, x, axes, keepdims);
}
Tensor reduce_min(const Tensor& x) { return reduce_min(x, all_axes(x)); }
Tensor reduce_min(const Tensor& x, std::vector<int> axes, bool keepdims) {
  return reduce(ir::Opcode::kReduceMin, x, axes, keepdims);
}

Tensor mean(const Tensor& x) { return mean(x, all_axes(x)); }
Tensor mean(const Tensor& x, std::vector<int> axes, bool keepdims) {
  Dims norm = trace::normalize_axes(x.shape(), axes, "mean");
  int64_t count = 1;
  for (int64_t a : norm) count *= x.dims()[static_cast<size_t>(a)];
  return reduce_sum(x, axes, keepdims) * (1.0 / static_cast<double>(count));
}

Tensor argmax(const Tensor& x, int axis) {
  ir::Attrs a;
  a.dims = {x.shape().normalize_axis(axis)};
  return trace::emit(ir::Opcode::kArgmax, {x}, std::move(a));
}

}  // namespace kiln
