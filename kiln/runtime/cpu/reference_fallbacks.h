// The CPU backend's reference fallbacks as a list: the ops it runs on the reference evaluator
// by design, because none of its kernels takes them, each with the reason: whole dtypes (no
// oneDNN form) or attributes (a window or a padding oneDNN refuses), the latter as the same
// predicate the kernel's adapter asks. The lowering (lowering.cpp) runs a listed fallback with
// a warning and refuses any other with a CompileError; the op conformance table
// (tests/conformance/op_conformance_test.cpp) fails on a dtype rule no case needs, so the list
// is exactly what the CPU does not run fast.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "kiln/core/dtype.h"
#include "kiln/ir/instruction.h"
#include "kiln/ir/opcode.h"

namespace kiln::cpu {

/// Instructions of `op` that run on the reference evaluator, and why: those whose result dtype
/// is in `dtypes` or, for an attribute rule, those `applies` holds for in any dtype.
struct ReferenceFallbackRule {
  ir::Opcode op;
  std::vector<DType> dtypes;  // empty for an attribute rule
  bool (*applies)(const ir::Instruction& inst) = nullptr;  // null for a dtype rule
  std::string_view reason;
};

/// Every rule: at most one dtype rule per op, and its attribute rules.
std::span<const ReferenceFallbackRule> reference_fallback_rules();

/// The rule that lists `inst` (an output fusion by its convolution or matmul), or null: no
/// kernel taking it is then a gap in the CPU backend, which the lowering refuses.
const ReferenceFallbackRule* find_reference_fallback(const ir::Instruction& inst);

/// The dtype rule that lists `op` in `dtype`, or null.
const ReferenceFallbackRule* find_reference_fallback(ir::Opcode op, DType dtype);

}  // namespace kiln::cpu
