// Random ops: rng_bits plus an integer-free map from bits to floats (the IR has no shifts).
#include "kiln/trace/ops/random.h"

#include <cmath>

#include "kiln/trace/emit.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/shape.h"
#include "kiln/trace/replica_context.h"

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

namespace {

// c0 + c1 t + c2 t^2 + ... by Horner's rule, coefficients highest power first.
Tensor polynomial(const Tensor& t, std::initializer_list<double> highest_first) {
  Tensor acc;
  for (double c : highest_first) acc = acc.defined() ? acc * t + c : full(t.shape(), c);
  return acc;
}

}  // namespace

// Acklam: a rational function of q = p - 0.5 in the center, of sqrt(-2 log p) in the tails.
Tensor normal_quantile(const Tensor& p) {
  constexpr double kLow = 0.02425;
  const Tensor q = p - 0.5, r = q * q;
  const Tensor central = q * polynomial(r, {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                            1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00}) /
                         polynomial(r, {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                        6.680131188771972e+01, -1.328068155288572e+01, 1.0});
  // The lower tail's formula at min(p, 1 - p), negated for the upper tail (the clamp keeps
  // log finite in the branch `where` discards).
  const Tensor t = sqrt(-2.0 * log(maximum(minimum(p, 1.0 - p), 1e-300)));
  const Tensor tail = polynomial(t, {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                     -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00}) /
                      polynomial(t, {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                     3.754408661907416e+00, 1.0});
  return where(less(p, kLow), tail, where(greater(p, 1.0 - kLow), -tail, central));
}

namespace {

// N(mean, stddev^2) from uniforms, mapped in f64: the rational function cancels terms of ~100
// (f32 would lose 5e-5 relative), and 16-bit uniforms would cut the tails short.
Tensor normal_from_uniform(const Tensor& u, DType dtype, double mean, double stddev) {
  // random_uniform can return exactly 0; the smallest step above it keeps the quantile finite.
  return cast(normal_quantile(maximum(u, std::ldexp(1.0, -32))) * stddev + mean, dtype);
}

}  // namespace

Tensor random_normal(const Tensor& key, const Dims& dims, DType dtype, double mean, double stddev) {
  return normal_from_uniform(random_uniform(key, dims, DType::kF64), dtype, mean, stddev);
}

Tensor batch_random_uniform(const Tensor& key, const Dims& dims, DType dtype) {
  const trace::ReplicaContext* replica = trace::current_replica_context();
  const int replicas = replica != nullptr ? replica->num_replicas_in_sync() : 1;
  if (replicas <= 1 || dims.empty()) return random_uniform(key, dims, dtype);
  // The values of the whole global batch, then this replica's rows: a model draws the same
  // numbers on any replica count (R x the random bits per replica; an offset counter on
  // rng_bits would avoid that, and these draws are small next to the layers around them).
  Dims global = dims;
  global[0] *= replicas;
  Dims starts(dims.size(), 0), limits = dims;
  starts[0] = dims[0] * replica->global_replica_id;
  limits[0] = starts[0] + dims[0];
  return slice(random_uniform(key, global, dtype), starts, limits);
}

Tensor batch_random_normal(const Tensor& key, const Dims& dims, DType dtype, double mean, double stddev) {
  return normal_from_uniform(batch_random_uniform(key, dims, DType::kF64), dtype, mean, stddev);
}

Tensor dropout(const Tensor& x, double rate, const Tensor& key, bool training) {
  if (rate < 0.0 || rate >= 1.0)
    KILN_THROW(ValueError, "[", trace::where("dropout"), "] rate must be in [0, 1), received ",
               rate, ".");
  if (!training || rate == 0.0) return x;
  Tensor keep = greater_equal(batch_random_uniform(key, x.dims(), x.dtype()), rate);
  return where(keep, x * (1.0 / (1.0 - rate)), 0.0);
}

}  // namespace kiln
