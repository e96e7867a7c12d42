// Elementwise ops: broadcasting/promotion glue around single IR instructions.
#include "kiln/trace/ops/elementwise.h"

#include <algorithm>

#include "kiln/trace/emit.h"
#include "kiln/trace/ops/shape.h"

namespace kiln {
namespace trace {

Dims broadcast_dims(const Dims& a, const Dims& b, const char* op) {
  size_t r = std::max(a.size(), b.size());
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    // Right-aligned: position i of the result is a[i - (r - a.size())] when that exists.
    int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (da != db && da != 1 && db != 1)
      KILN_THROW(ShapeError, "[", where(op), "] cannot broadcast ", dims_to_string(a), " with ",
                 dims_to_string(b), ": dimension ", i, " is ", da, " vs ", db,
                 ". Hint: reshape one operand so that each dimension is equal or 1.");
    out[i] = da == 1 ? db : da;  // NumPy's rule: 1 stretches to 0 too (an empty batch)
  }
  return out;
}

std::pair<Tensor, Tensor> broadcast_pair(const Tensor& a, const Tensor& b, const char* op) {
  DType t = a.dtype() == b.dtype() ? a.dtype() : promote(a.dtype(), b.dtype());
  Dims d = broadcast_dims(a.dims(), b.dims(), op);
  return {broadcast_to(cast(a, t), d), broadcast_to(cast(b, t), d)};
}

}  // namespace trace

namespace {

using ir::Opcode;

Tensor unary(Opcode op, const Tensor& x) { return trace::emit(op, {x}); }

Tensor binary(Opcode op, const Tensor& a, const Tensor& b) {
  auto [x, y] = trace::broadcast_pair(a, b, ir::opcode_name(op).data());
  return trace::emit(op, {x, y});
}

Tensor compare(ir::Comparison c, const Tensor& a, const Tensor& b) {
  auto [x, y] = trace::broadcast_pair(a, b, "compare");
  ir::Attrs attrs;
  attrs.comparison = c;
  return trace::emit(Opcode::kCompare, {x, y}, std::move(attrs));
}

Tensor like(const Tensor& t, double v) { return Tensor::scalar(v, t.dtype()); }

}  // namespace

#define KILN_UNARY(N, text, fn, ...) \
  Tensor fn(const Tensor& x) { return unary(Opcode::k##N, x); }
#define KILN_BINARY(N, text, fn, ...) \
  Tensor fn(const Tensor& a, const Tensor& b) { return binary(Opcode::k##N, a, b); }
#include "kiln/ir/elementwise.def"
#undef KILN_UNARY
#undef KILN_BINARY

Tensor pow(const Tensor& a, double exponent) { return pow(a, like(a, exponent)); }
Tensor maximum(const Tensor& a, double b) { return maximum(a, like(a, b)); }
Tensor minimum(const Tensor& a, double b) { return minimum(a, like(a, b)); }
Tensor square(const Tensor& x) { return mul(x, x); }

Tensor floor_divide(const Tensor& a, const Tensor& b) {
  auto [x, y] = trace::broadcast_pair(a, b, "floor_divide");
  if (is_floating(x.dtype())) return floor(div(x, y));
  // Truncated quotient, one less where the division was inexact and the signs differ: the
  // floored remainder (mod) is then nonzero with the divisor's sign, so its sign differs from
  // x's. (x mod 0 is x, so x // 0 stays x / 0 = -1.)
  Tensor r = mod(x, y);
  Tensor inexact_across_zero = where(not_equal(r, like(r, 0.0)), not_equal(less(r, 0.0), less(x, 0.0)), 0.0);
  return sub(div(x, y), cast(inexact_across_zero, x.dtype()));
}

Tensor equal(const Tensor& a, const Tensor& b) { return compare(ir::Comparison::kEq, a, b); }
Tensor not_equal(const Tensor& a, const Tensor& b) { return compare(ir::Comparison::kNe, a, b); }
Tensor less(const Tensor& a, const Tensor& b) { return compare(ir::Comparison::kLt, a, b); }
Tensor less_equal(const Tensor& a, const Tensor& b) { return compare(ir::Comparison::kLe, a, b); }
Tensor greater(const Tensor& a, const Tensor& b) { return compare(ir::Comparison::kGt, a, b); }
Tensor greater_equal(const Tensor& a, const Tensor& b) { return compare(ir::Comparison::kGe, a, b); }
Tensor equal(const Tensor& a, double b) { return equal(a, like(a, b)); }
Tensor less(const Tensor& a, double b) { return less(a, like(a, b)); }
Tensor greater(const Tensor& a, double b) { return greater(a, like(a, b)); }
Tensor greater_equal(const Tensor& a, double b) { return greater_equal(a, like(a, b)); }

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  if (condition.dtype() != DType::kBool)
    KILN_THROW(DTypeError, "[", trace::where("where"), "] condition must be bool, received ",
               condition.shape(), ". Hint: compare first, e.g. greater(x, 0.0).");
  auto [x, y] = trace::broadcast_pair(a, b, "where");
  Dims d = trace::broadcast_dims(condition.dims(), x.dims(), "where");
  return trace::emit(Opcode::kSelect,
                     {broadcast_to(condition, d), broadcast_to(x, d), broadcast_to(y, d)});
}

Tensor where(const Tensor& condition, const Tensor& a, double b) {
  return where(condition, a, like(a, b));
}

Tensor cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  Shape s = x.shape().with_dtype(dtype);
  return trace::emit(Opcode::kConvert, {x}, {}, &s);
}

Tensor zeros(const Shape& shape) { return trace::full(shape, 0.0); }
Tensor ones(const Shape& shape) { return trace::full(shape, 1.0); }
Tensor full(const Shape& shape, double value) { return trace::full(shape, value); }
Tensor zeros_like(const Tensor& x) { return zeros(x.shape()); }
Tensor ones_like(const Tensor& x) { return ones(x.shape()); }
Tensor constant(HostTensor value) { return trace::constant(std::move(value)); }

}  // namespace kiln
