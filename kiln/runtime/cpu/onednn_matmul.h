// MatmulKernel: dot_general on oneDNN's matmul primitive, with a fused epilogue (bias add and
// one activation as post-ops) when it comes from an output fusion (the compiler's
// match_output_fusion says which). Operand layouts are expressed as strides, so transposed
// operands cost nothing.
//
// bf16/f16 operands take one of two paths, chosen per shape when the kernel is built:
// - native: oneDNN's 16-bit kernel (f32 accumulation inside), where the CPU has one
//   (AVX512-BF16, AMX, AVX512-FP16: oneDNN picks at run time; its ISA is in isa());
// - widened: f32 compute from the 16-bit storage, tile by tile: a tile of rows of the left
//   operand and a block of columns of the right one are widened into small scratch buffers,
//   multiplied by oneDNN's f32 kernel and the result tile rounded back (round to nearest
//   even). Scratch is bounded by the tile sizes (16 MiB at most), shared by an executable's
//   widened kernels (WidenScratch).
// Where both exist, the faster on this shape wins: timed once at compile time (a few reps,
// the minimum), remembered per process and on disk beside the generated kernels
// (contraction_decisions.h); KILN_16BIT_CONTRACTIONS forces one.
#pragma once

#include <memory>
#include <string>

#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/ir/instruction.h"

namespace kiln::cpu {

class MatmulImpl;
class WidenScratch;

enum class MatmulPath {
  kF32,      // f32 operands
  kNative,   // oneDNN's 16-bit kernel
  kWidened,  // f32 compute from 16-bit storage, tile by tile
  kFixedOrder,  // batch-invariant: Kiln's fixed-order GEMM (fixed_order_gemm.h), 16-bit widened by tile
};
const char* matmul_path_name(MatmulPath p);

/// How 16-bit matmuls and convolutions choose their path (DebugOptions::sixteen_bit_contractions
/// and kernel_cache_dir).
struct MatmulOptions {
  enum class Choice { kAuto, kNative, kF32 } choice = Choice::kAuto;
  /// Where timed choices are kept on disk; empty keeps them in memory only.
  std::string cache_dir;
  /// Every matmul runs the fixed-order GEMM, so a result row does not depend on the batch
  /// around it (batch-invariant inference; DebugOptions::batch_invariant).
  bool batch_invariant = false;

  static MatmulOptions from(const std::string& sixteen_bit_contractions, const std::string& cache_dir,
                            bool batch_invariant = false);
};

/// oneDNN's implementation of a 16-bit (`t`: bf16 or f16) matmul on this CPU, e.g.
/// "brg:avx512_core_bf16"; empty when it has none (or only its reference code).
std::string native_matmul_isa(DType t);

/// Operands of a widened 16-bit matmul that arrive as f32 values, to round to its dtype.
struct F32Sources {
  bool lhs = false, rhs = false, bias = false;
};

class MatmulKernel {
 public:
  /// Returns nullptr when `dot`'s dimension numbers cannot be viewed as a (batched) matrix
  /// product with one stride per group (the caller falls back to a reference kernel).
  /// `bias` and `activation` describe an output-fusion epilogue (compiler::match_output_fusion).
  /// `scratch`: where the widened path keeps its f32 tiles (null: a buffer of its own).
  /// `f32_sources`: operands given as f32 values for a 16-bit `dot` to round as it widens
  /// them (the lowering folds a convert of an f32 parameter in); they make the path widened.
  static std::unique_ptr<MatmulKernel> create(const ir::Instruction& dot, bool bias = false,
                                              compiler::EpilogueActivation activation = compiler::EpilogueActivation::kNone,
                                              const MatmulOptions& options = {},
                                              std::shared_ptr<WidenScratch> scratch = nullptr, F32Sources f32_sources = {});
  /// Whether create() can make a kernel for `dot`'s dtype and layout (not nullptr).
  static bool can_run(const ir::Instruction& dot);
  ~MatmulKernel();
  /// `bias` may be null when the epilogue has none. `out` has the dot's (or fusion's) dtype.
  void run(const void* lhs, const void* rhs, const void* bias, void* out) const;

  MatmulPath path() const;
  /// oneDNN's implementation of the path that runs, e.g. "brg:avx512_core_bf16".
  const std::string& isa() const;

 private:
  explicit MatmulKernel(std::unique_ptr<MatmulImpl> impl);
  std::unique_ptr<MatmulImpl> impl_;
};

}  // namespace kiln::cpu
