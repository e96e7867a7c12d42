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

Tensor dropout(const Tensor& x, double rate, const Tensor& key, bool training) {
  if (rate < 0.0 || rate >= 1.0)
    KILN_THROW(ValueError, "[", trace::where("dropout"), "] rate must be in [0, 1), received ",
               rate, ".");
  if (!training || rate == 0.0) return x;
  Tensor u;
  const trace::ReplicaContext* replica = trace::current_replica_context();
  const int replicas = replica != nullptr ? replica->num_replicas_in_sync() : 1;
  if (replicas > 1 && x.rank() > 0) {
    // The mask of the whole global batch, then this replica's rows: a model gets the same
    // masks on any replica count (R x the random bits per replica; an offset counter on
    // rng_bits would avoid that, and these masks are small next to the layers around them).
    Dims global = x.dims();
    global[0] *= replicas;
    Dims starts(x.dims().size(), 0), limits = x.dims();
    starts[0] = x.dims()[0] * replica->global_replica_id;
    limits[0] = starts[0] + x.dims()[0];
    u = slice(random_uniform(key, global, x.dtype()), starts, limits);
  } else {
    u = random_uniform(key, x.dims(), x.dtype());
  }
  Tensor keep = greater_equal(u, rate);
  return where(keep, x * (1.0 / (1.0 - rate)), 0.0);
}

}  // namespace kiln
