// LoopInvariantHoistingPass: moves work that every iteration of a while repeats out of the loop.
#pragma once

#include "kiln/compiler/pass.h"

namespace kiln::compiler {

/// In each while of the entry computation, computes once before the loop what the body
/// computes from loop invariants alone (carried values the body passes through unchanged),
/// and feeds the result in as a new invariant carried value (XLA's while-loop invariant code
/// motion). A scan's backward loop, for instance, transposes the weights once, not per step.
///
/// Deliberately does not hoist: constants and what depends only on constants (constant
/// folding's), the collectives (a collective stays where the program put it), nested while and
/// conditional, or anything that reads a value the loop changes. A loop that never runs then
/// computes the hoisted values for nothing; they are pure, so only time is spent.
///
/// Needs: the verifier's invariants. Keeps: outputs, aliases, results of every while.
/// Nested loops are hoisted when their own body is compiled (a body is a module's entry then).
class LoopInvariantHoistingPass final : public Pass {
 public:
  std::string_view name() const override { return "loop-invariant-hoisting"; }
  bool run(ir::Module& module) override;
};

}  // namespace kiln::compiler
