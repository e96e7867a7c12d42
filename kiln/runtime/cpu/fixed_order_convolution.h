// The forward convolution of batch-invariant programs: each output row (n, oh, ow) gathers its
// receptive field (kh, kw, c in that order, zeros where the window overhangs the padding)
// and multiplies it by the HWIO filter, seen as a (KH*KW*Cg, F) matrix, with the fixed-order
// GEMM (fixed_order_gemm.h). An output's sum runs over the same k in the same order whatever
// the batch, the thread count or the CPU, which oneDNN's convolutions do not promise.
#pragma once

#include <memory>

#include "kiln/ir/instruction.h"

namespace kiln::cpu {

class FixedOrderConvolution {
 public:
  /// `inst`: a convolution, or a kOutput fusion of convolution [+ bias] [-> activation], in
  /// f32, bf16 or f16 (16-bit values are widened exactly and each result rounded once).
  /// nullptr for anything else (conv_backward_*, other dtypes, negative padding).
  static std::unique_ptr<FixedOrderConvolution> create(const ir::Instruction& inst);
  ~FixedOrderConvolution();

  /// `in`: x, w [, bias] as `inst`'s operands; `out` its result (NHWC).
  void run(const void* const* in, void* out) const;
  /// "convolution+bias+relu (kiln fixed-order)" for step dumps.
  const std::string& label() const;

 private:
  struct Impl;
  explicit FixedOrderConvolution(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::cpu
