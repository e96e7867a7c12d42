// MatmulKernel: dot_general on oneDNN's matmul primitive, with a fused epilogue (bias add and
// one activation as post-ops) when it comes from an output fusion. Operand layouts are
// expressed as strides, so transposed operands cost nothing. bf16/f16 operands are widened to
// f32 around the call (oneDNN 2.6 has no bf16 matmul on AVX2 CPUs).
#pragma once

#include <memory>

#include "kiln/ir/instruction.h"

namespace kiln::cpu {

enum class Activation { kNone, kRelu, kLogistic, kTanh };

struct MatmulEpilogue {
  bool bias = false;  // a vector added along the last output dim
  int bias_parameter = -1;  // which fusion-body parameter holds it
  Activation activation = Activation::kNone;
};

class MatmulImpl;

class MatmulKernel {
 public:
  /// Returns nullptr when `dot`'s dimension numbers cannot be viewed as a (batched) matrix
  /// product with one stride per group (the caller falls back to a reference kernel).
  static std::unique_ptr<MatmulKernel> create(const ir::Instruction& dot, MatmulEpilogue epilogue);
  ~MatmulKernel();
  /// `bias` may be null when the epilogue has none. `out` has the dot's (or fusion's) dtype.
  void run(const void* lhs, const void* rhs, const void* bias, void* out) const;

 private:
  explicit MatmulKernel(std::unique_ptr<MatmulImpl> impl);
  std::unique_ptr<MatmulImpl> impl_;
};

/// Recognizes an output-fusion body: dot(p0, p1) [+ broadcast(p2) along the last dim]
/// [-> relu | logistic | tanh]. Returns the dot and fills `epilogue`, or nullptr.
const ir::Instruction* match_output_fusion(const ir::Computation& body, MatmulEpilogue* epilogue);

}  // namespace kiln::cpu
