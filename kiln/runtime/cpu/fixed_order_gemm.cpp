// The fixed-order GEMM (fixed_order_gemm.h): tiles of kTileRows x kTileCols outputs, each a
// register-blocked fma chain over the whole K, shared over the team by tile.
#include "kiln/runtime/cpu/fixed_order_gemm.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "kiln/core/float_math.h"
#include "kiln/runtime/cpu/cpu_isa_impl.h"
#include "kiln/runtime/cpu/team_impl.h"

namespace kiln::cpu {
namespace {

struct GemmGeometry {
  int tile_rows;
  int tile_cols;
  void (*tile)(const FixedOrderGemmArgs&, int64_t m0, int rows, int64_t n0, int cols);
};

#define KILN_ISA_BODY "kiln/runtime/cpu/fixed_order_gemm_exec.inc"
#include "kiln/runtime/cpu/cpu_isa_variants.inc"

void epilogue_rows(const FixedOrderGemmArgs& g, int64_t m0, int64_t m1) {
  for (int64_t m = m0; m < m1; ++m) {
    float* c = g.c + m * g.ldc;
    for (int64_t n = 0; n < g.N; ++n) {
      float v = c[n];
      if (g.bias != nullptr) v += g.bias[n];
      c[n] = apply_epilogue_activation(g.activation, v);
    }
  }
}

}  // namespace

float apply_epilogue_activation(compiler::EpilogueActivation activation, float x) {
  using compiler::EpilogueActivation;
  switch (activation) {
    case EpilogueActivation::kNone: return x;
    case EpilogueActivation::kRelu: return x != x ? x : (x < 0.0f ? 0.0f : x);  // max(x, 0), NaN kept
    case EpilogueActivation::kTanh: return float_math::tanh(x);
    case EpilogueActivation::kLogistic: return float_math::logistic(x);
    case EpilogueActivation::kExp: return float_math::exp(x);
    case EpilogueActivation::kLog: return float_math::log(x);
    case EpilogueActivation::kSqrt: return std::sqrt(x);
    case EpilogueActivation::kAbs: return std::fabs(x);
  }
  return x;
}

void fixed_order_gemm(const FixedOrderGemmArgs& g) {
  static const GemmGeometry& geo = *KILN_ISA_SELECT(kGeometry);
  if (g.M <= 0 || g.N <= 0) return;
  const int64_t row_tiles = (g.M + geo.tile_rows - 1) / geo.tile_rows;
  const int64_t col_tiles = (g.N + geo.tile_cols - 1) / geo.tile_cols;
  const int64_t tiles = row_tiles * col_tiles;
  const bool epilogue = g.bias != nullptr || g.activation != compiler::EpilogueActivation::kNone;
  // Column tiles outer: a (K, tile_cols) panel of w stays in cache over the rows.
  auto tile = [&](int64_t t) {
    const int64_t m0 = (t % row_tiles) * geo.tile_rows, n0 = (t / row_tiles) * geo.tile_cols;
    geo.tile(g, m0, static_cast<int>(std::min<int64_t>(geo.tile_rows, g.M - m0)), n0,
             static_cast<int>(std::min<int64_t>(geo.tile_cols, g.N - n0)));
  };
  if (!g.share_team) {  // no worksharing: an orphaned omp for would bind to the caller's team
    for (int64_t t = 0; t < tiles; ++t) tile(t);
    if (epilogue) epilogue_rows(g, 0, g.M);
    return;
  }
  run_on_team(g.M * g.N * g.K >= kParallelThreshold * 8, [&] {
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tiles; ++t) tile(t);
    if (epilogue) {
#pragma omp for schedule(static)
      for (int64_t m = 0; m < g.M; ++m) epilogue_rows(g, m, m + 1);
    }
  });
}

}  // namespace kiln::cpu
