// CsePass: common subexpression elimination over the entry computation.
#pragma once

#include "kiln/compiler/pass.h"

namespace kiln::compiler {

/// Merges instructions with the same opcode, shape, operands and attributes into the first one
/// in post order (constants compare by bytes, so equal literals merge too). add, mul, max, min
/// and eq/ne compares also match with their two operands swapped.
///
/// rng_bits with the same key operand and shape is the same value (counter-based generator),
/// so it merges; rng_bits with different keys never does, because its operands differ.
/// Deliberately does not merge: parameters (distinct inputs even when equally shaped); fusions
/// with different bodies (compares body pointers, not body contents).
///
/// Needs: a valid entry computation. Keeps: every output's value; removes the merged copies.
class CsePass final : public Pass {
 public:
  std::string_view name() const override { return "cse"; }
  bool run(ir::Module& module) override;
};

}  // namespace kiln::compiler
