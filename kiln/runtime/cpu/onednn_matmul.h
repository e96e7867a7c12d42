// MatmulKernel: dot_general on oneDNN's matmul primitive, with a fused epilogue (bias add and
// one activation as post-ops) when it comes from an output fusion (the compiler's
// match_output_fusion says which). Operand layouts are
// expressed as strides, so transposed operands cost nothing. bf16/f16 operands are widened to
// f32 around the call (oneDNN 2.6 has no bf16 matmul on AVX2 CPUs).
#pragma once

#include <memory>

#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/ir/instruction.h"

namespace kiln::cpu {

class MatmulImpl;

class MatmulKernel {
 public:
  /// Returns nullptr when `dot`'s dimension numbers cannot be viewed as a (batched) matrix
  /// product with one stride per group (the caller falls back to a reference kernel).
  /// `bias` and `activation` describe an output-fusion epilogue (compiler::match_output_fusion).
  static std::unique_ptr<MatmulKernel> create(const ir::Instruction& dot, bool bias = false,
                                              compiler::EpilogueActivation activation = compiler::EpilogueActivation::kNone);
  ~MatmulKernel();
  /// `bias` may be null when the epilogue has none. `out` has the dot's (or fusion's) dtype.
  void run(const void* lhs, const void* rhs, const void* bias, void* out) const;

 private:
  explicit MatmulKernel(std::unique_ptr<MatmulImpl> impl);
  std::unique_ptr<MatmulImpl> impl_;
};

}  // namespace kiln::cpu
