#include "kiln/runtime/cuda/reduction_plan.h"

#include <algorithm>
#include <limits>

#include "kiln/core/check.h"

namespace kiln::cuda {

ReductionPlan ReductionPlan::choose(int64_t outer, int64_t r, int64_t inner) {
  constexpr int64_t kMaxGrid = std::numeric_limits<int32_t>::max();
  constexpr int64_t kThreads = 256;  // the thread-per-result kernel's block, as the loop kernels'
  ReductionPlan p;
  const int64_t n = outer * inner;
  int64_t grid = 0;
  if (r < 32 || (inner >= 32 && n >= kManyResults)) {
    p.layout = codegen::GpuReduction::kThreadPerResult;
    p.block_x = kThreads;
    grid = (n + kThreads - 1) / kThreads;
  } else if (inner >= 32) {
    p.layout = codegen::GpuReduction::kColumnTiles;
    grid = (inner + 31) / 32 * outer;
    p.block_x = 32;
    p.block_y = grid < kWideTiles ? 32 : 8;
  } else {
    p.layout = codegen::GpuReduction::kBlockPerResult;
    p.block_x = r < 1024 ? 32 : n < kWideTiles ? 1024 : 256;
    grid = std::min(n, kMaxGrid);  // the kernel strides over the results beyond the grid
  }
  if (grid > kMaxGrid)
    KILN_THROW(CompileError, "[cuda] a reduction of ", outer, "x", r, "x", inner, " needs ", grid,
               " blocks, more than CUDA's 2^31 - 1.");
  p.grid = static_cast<unsigned>(grid);
  return p;
}

std::string ReductionPlan::describe() const {
  switch (layout) {
    case codegen::GpuReduction::kThreadPerResult: return "thread per result";
    case codegen::GpuReduction::kBlockPerResult: return str_cat("block of ", block_x, " per result");
    case codegen::GpuReduction::kColumnTiles: return str_cat("column tiles of ", block_x, "x", block_y);
  }
  return "";
}

}  // namespace kiln::cuda
