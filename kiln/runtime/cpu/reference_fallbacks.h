// The CPU backend's reference fallbacks as a list: the ops and dtypes it runs on the
// reference evaluator by design, because none of its kernels takes them, each with the reason.
// The lowering (cpu_lowerer_impl.h) marks each fallback as listed or not; the op conformance
// table (tests/conformance/op_conformance_test.cpp) fails on a fallback the list lacks and on
// an entry no case falls back on, so the list is exactly what the CPU does not run fast.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "kiln/core/dtype.h"
#include "kiln/ir/opcode.h"

namespace kiln::cpu {

/// One op's dtypes that run on the reference evaluator, and why.
struct ReferenceFallbackRule {
  ir::Opcode op;
  std::vector<DType> dtypes;  // the instruction's result dtype
  std::string_view reason;
};

/// Every rule, one per op.
std::span<const ReferenceFallbackRule> reference_fallback_rules();

/// The rule that lists `op` in `dtype`, or null.
const ReferenceFallbackRule* find_reference_fallback(ir::Opcode op, DType dtype);

}  // namespace kiln::cpu
