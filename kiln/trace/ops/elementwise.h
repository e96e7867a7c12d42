// Elementwise ops on Tensors: unary math, binary arithmetic with NumPy-style broadcasting and
// dtype promotion, comparisons (bool results), select and dtype conversion. Each maps to one
// IR op (plus broadcast_in_dim/convert where operands differ).
#pragma once

#include "kiln/trace/tensor.h"

namespace kiln {

/// -x, |x|, sign(x) in {-1, 0, 1}.
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
/// Floating-point math (DTypeError on integer inputs; cast first).
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor tanh(const Tensor& x);
/// 1 / (1 + exp(-x)) (the IR's `logistic`).
Tensor sigmoid(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor erf(const Tensor& x);

/// Binary ops broadcast both operands to a common shape (NumPy rules) and promote dtypes.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double exponent);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, double b);
Tensor minimum(const Tensor& a, double b);

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
