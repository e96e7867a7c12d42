// Random ops from an explicit key (i64 scalar tensor): counter-based rng_bits mapped to
// floats, so a step's randomness is reproducible and identical across restarts.
#pragma once

#include "kiln/trace/tensor.h"

namespace kiln {

/// Uniform values in [minval, maxval) of `dims` and floating `dtype` from `key` (i64[]).
/// 32 random bits map to [0, 1) as bits * 2^-32 + 0.5 in f32, clamped below 1.
Tensor random_uniform(const Tensor& key, const Dims& dims, DType dtype = DType::kF32,
                      double minval = 0.0, double maxval = 1.0);
/// Standard normal quantiles Phi^-1(p) for p in (0, 1), elementwise (Acklam's rational
/// approximation, relative error below 1.2e-9 in f64; f32 evaluation loses ~5e-5 to
/// cancellation): random_normal's map from uniforms.
Tensor normal_quantile(const Tensor& p);
/// Normal values with `mean` and `stddev` of `dims` and floating `dtype` from `key` (i64[]):
/// normal_quantile of random_uniform's values, computed in f64 (32 random bits: the tails stop
/// near 6.2 sigma).
Tensor random_normal(const Tensor& key, const Dims& dims, DType dtype = DType::kF32, double mean = 0.0,
                     double stddev = 1.0);
/// random_uniform / random_normal for a tensor whose dim 0 is a replica's shard of the
/// global batch: the global batch's values, this replica's rows, so training draws the same
/// numbers on any replica count (plain random_uniform outside a strategy).
Tensor batch_random_uniform(const Tensor& key, const Dims& dims, DType dtype = DType::kF32);
Tensor batch_random_normal(const Tensor& key, const Dims& dims, DType dtype = DType::kF32, double mean = 0.0,
                           double stddev = 1.0);
/// Inverted dropout: zeroes each element with probability `rate` and scales the rest by
/// 1 / (1 - rate). Returns x unchanged when !training or rate == 0. Under a strategy, x is a
/// replica's shard of the global batch and gets its rows of the global batch's mask, so
/// training with dropout gives the same result on any replica count.
Tensor dropout(const Tensor& x, double rate, const Tensor& key, bool training = true);

}  // namespace kiln
