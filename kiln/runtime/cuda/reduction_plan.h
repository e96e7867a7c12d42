// Which reduction kernel (codegen::GpuReduction) a reduction over [outer, r, inner] runs on the
// GPU, and its launch: chosen from the geometry at lowering time. No CUDA types, so the rule is
// tested without a GPU.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/compiler/codegen/llvm_codegen.h"

namespace kiln::cuda {

/// The rule (n = outer * inner results, each folding r elements):
/// - r < 32, or inner >= 32 with n >= kManyResults: kThreadPerResult. A row shorter than a warp
///   leaves a cooperating block idle; with inner >= 32 consecutive threads already read
///   consecutive elements and n threads fill the GPU.
/// - inner >= 32 otherwise: kColumnTiles, 32 x 32 threads per tile where there are fewer tiles
///   than kWideTiles (the convnet's bias gradients: [86528, 32] -> 1 tile), else 32 x 8.
/// - inner < 32 (rows of consecutive elements when inner is 1): kBlockPerResult, one warp per
///   result for r < 1024, 256 threads for longer rows, 1024 where n < kWideTiles (few long rows:
///   each block is one SM's work).
/// Results are folded by one block each (no second pass, so no scratch memory and a fixed
/// order: the same inputs give the same bits every run).
struct ReductionPlan {
  static constexpr int64_t kManyResults = int64_t{1} << 16;
  static constexpr int64_t kWideTiles = 264;  // two blocks per SM of an H100/H200 (132 SMs)

  codegen::GpuReduction layout = codegen::GpuReduction::kThreadPerResult;
  unsigned grid = 0;  // blocks (x); 0: nothing to launch (no results)
  unsigned block_x = 1, block_y = 1;

  /// CompileError where the grid would exceed CUDA's 2^31 - 1 blocks.
  static ReductionPlan choose(int64_t outer, int64_t r, int64_t inner);
  /// "thread per result", "block of 256 per result", "column tiles of 32x8".
  std::string describe() const;
};

}  // namespace kiln::cuda
