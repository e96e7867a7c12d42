// ConstantFoldingPass: evaluates small instructions whose operands are all constants.
#pragma once

#include <cstdint>

#include "kiln/compiler/pass.h"

namespace kiln::compiler {

/// Replaces an entry instruction whose operands are all constants by the constant it computes
/// (ir::evaluate_instruction, the reference evaluator), when the result has at most
/// `max_elements` elements. An elementwise op whose operands are all splats (scalar constants
/// or broadcasts of one) is folded on the scalars and re-broadcast, whatever its size.
///
/// Deliberately does not fold: parameters, iota (cheap to generate, big to store), rng_bits
/// (random by design), the collectives (their values depend on the other replicas), fusions, and
/// broadcast_in_dim (a broadcast scalar stays a broadcast: fused loops read it for free, a
/// literal would cost memory and bandwidth). Operands larger than `max_operand_elements` are
/// not read, to keep compile time small.
///
/// Needs: ir::evaluate_instruction to support the op. Keeps: every value's shape and dtype;
/// removes the instructions it made dead.
class ConstantFoldingPass final : public Pass {
 public:
  explicit ConstantFoldingPass(int64_t max_elements = 1024, int64_t max_operand_elements = 1 << 16)
      : max_elements_(max_elements), max_operand_elements_(max_operand_elements) {}
  std::string_view name() const override { return "constant-folding"; }
  bool run(ir::Module& module) override;

 private:
  int64_t max_elements_;
  int64_t max_operand_elements_;
};

}  // namespace kiln::compiler
