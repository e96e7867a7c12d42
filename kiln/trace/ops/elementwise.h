// Elementwise ops on Tensors: unary math, binary arithmetic with NumPy-style broadcasting and
// dtype promotion, comparisons (bool results), select and dtype conversion. Each maps to one
// IR op (plus broadcast_in_dim/convert where operands differ), except square and
// floor_divide, which are compositions.
#pragma once

#include "kiln/trace/tensor.h"

namespace kiln {

/// One function per row of the elementwise table (ir/elementwise.def, where each op's math and
/// dtypes are described): neg, abs, sign, exp, log, log1p, tanh, sigmoid (the IR's
/// `logistic`), sqrt, rsqrt, erf, expm1, sin, cos, floor, ceil, round (halves to even), and the
/// binary add, sub, mul, div, pow, maximum, minimum, atan2, mod (the divisor's sign, as
/// TensorFlow's floormod). Floating-point rows throw a DTypeError on integer inputs (cast
/// first). Binary ops broadcast both operands to a common shape (NumPy rules) and promote
/// dtypes.
#define KILN_UNARY(N, text, fn, ...) Tensor fn(const Tensor& x);
#define KILN_BINARY(N, text, fn, ...) Tensor fn(const Tensor& a, const Tensor& b);
#include "kiln/ir/elementwise.def"
#undef KILN_UNARY
#undef KILN_BINARY

Tensor pow(const Tensor& a, double exponent);
Tensor maximum(const Tensor& a, double b);
Tensor minimum(const Tensor& a, double b);
/// x * x.
Tensor square(const Tensor& x);
/// floor(a / b): TensorFlow's floordiv (NumPy's floor_divide). Integers round toward -inf
/// (x // 0 is -1, as div defines x / 0); floats divide in their dtype, then take the floor.
Tensor floor_divide(const Tensor& a, const Tensor& b);

/// Comparisons return bool tensors.
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
Tensor equal(const Tensor& a, double b);
Tensor less(const Tensor& a, double b);
Tensor greater(const Tensor& a, double b);
Tensor greater_equal(const Tensor& a, double b);

/// condition ? a : b elementwise; all three broadcast together. `condition` must be bool.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, double b);
/// Converts to `dtype` (returns x itself when it already has it).
Tensor cast(const Tensor& x, DType dtype);

/// Constant tensors (concrete outside a trace, constants inside).
Tensor zeros(const Shape& shape);
Tensor ones(const Shape& shape);
Tensor full(const Shape& shape, double value);
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
Tensor constant(HostTensor value);

namespace trace {
/// Promotes `a` and `b` to one dtype and broadcasts them to one shape (NumPy rules).
std::pair<Tensor, Tensor> broadcast_pair(const Tensor& a, const Tensor& b, const char* op);
/// The NumPy broadcast of two dims lists; ShapeError naming `op` when incompatible.
Dims broadcast_dims(const Dims& a, const Dims& b, const char* op);
}  // namespace trace

}  // namespace kiln
