// Random ops: rng_bits plus an integer-free map from bits to floats (the IR has no shifts).
#include "kiln/trace/ops/random.h"

#include <cmath>

#include "kiln/trace/emit.h"
#include "kiln/trace/ops/elementwise.h"

namespace kiln {

Tensor random_uniform(const Tensor& key, const Dims& dims, DType dtype, double minval,
                      double maxval) {
  if (!is_floating(dtype))
    KILN_THROW(DTypeError, "[", trace::where("random_uniform"), "] needs a floating dtype, "
               "received ", dtype, ".");
  if (key.dtype() != DType::kI64 || key.rank() != 0)
    KILN_THROW(DTypeError, "[", trace::where("random_uniform"), "] key must be an i64 scalar, "
               "received ", key.shape(), ". Hint: Tensor::scalar(seed, DType::kI64).");
  Shape bits_shape(DType::kI32, dims);
  Tensor bits = trace::emit(ir::Opcode::kRngBits, {key}, {}, &bits_shape);
  // i32 in [-2^31, 2^31) -> [0, 1]; f32 rounding can reach 1.0, so clamp below it.
  Tensor u = cast(bits, DType::kF32) * std::ldexp(1.0, -32) + 0.5;
  int mantissa = dtype == DType::kBF16 ? 8 : dtype == DType::kF16 ? 11 : 24;
  double below_one = 1.0 - std::ldexp(1.0, -mantissa);
  u = minimum(cast(u, dtype), below_one);
  if (minval == 0.0 && maxval == 1.0) return u;
  return u * (maxval - minval) + minval;
}

Tensor dropout(const Tensor& x, double rate, const Tensor& key, bool training) {
  if (rate < 0.0 || rate >= 1.0)
    KILN_THROW(ValueError, "[", trace::where("dropout"), "] rate must be in [0, 1), received ",
               rate, ".");
  if (!training || rate == 0.0) return x;
  Tensor keep = greater_equal(random_uniform(key, x.dims(), x.dtype()), rate);
  return where(keep, x * (1.0 / (1.0 - rate)), 0.0);
}

}  // namespace kiln
