// Kiln's own f32 GEMM whose every output is summed in one fixed order: acc = 0, then
// acc = fma(a[m][k], w[k][n], acc) for k = 0, 1, ..., K-1, then + bias, then the activation.
// Nothing in that order depends on M (the batch), on how the work is split over threads, or
// on the vector width, so a row of the result has the same bits whatever batch it sits in,
// on every x86-64-v3 or v4 CPU (both ISA variants run the same fma chain per lane). This is
// what batch-invariant inference runs instead of oneDNN, whose kernels pick their blocking,
// K splitting and microkernels by shape and thread count (docs/numerics.md).
#pragma once

#include <cstdint>

#include "kiln/compiler/passes/output_fusion.h"

namespace kiln::cpu {

/// One (M, K) x (K, N) product. `a` is read at a[m * lm + k * lk]; `w` is row-major with
/// leading dimension ldw (w[k * ldw + n]); `c` row-major with leading dimension ldc.
/// `bias` (N values) may be null.
struct FixedOrderGemmArgs {
  const float* a = nullptr;
  int64_t lm = 0, lk = 1;
  const float* w = nullptr;
  int64_t ldw = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  int64_t M = 0, N = 0, K = 0;
  const float* bias = nullptr;
  compiler::EpilogueActivation activation = compiler::EpilogueActivation::kNone;
  /// Share the tiles over the OpenMP team (a new one when none is active); false runs them on
  /// this thread alone, for callers that share out larger work themselves.
  bool share_team = true;
};

/// c = activation(a . w + bias), each element in the fixed order above.
void fixed_order_gemm(const FixedOrderGemmArgs& args);

/// The activation of an output-fusion epilogue on one value, with the elementwise ops' own
/// math (core/float_math.h), so a fused epilogue equals the unfused op bit for bit.
float apply_epilogue_activation(compiler::EpilogueActivation activation, float x);

}  // namespace kiln::cpu
