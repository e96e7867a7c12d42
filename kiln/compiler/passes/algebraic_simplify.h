// AlgebraicSimplifyPass: local rewrites that remove work (x * 1 -> x, transpose of transpose).
#pragma once

#include "kiln/compiler/pass.h"

namespace kiln::compiler {

/// Rewrites identities in the entry computation, one table row per rule (algebraic_simplify.cpp):
/// x+0, 0+x, x-0, x*1, 1*x, x/1, integer x*0, neg(neg x), reshape of reshape, reshape to the same
/// shape, identity transpose, transpose of transpose, broadcast_in_dim to the same shape,
/// convert to the same dtype, select with a splat-constant predicate. "0" and "1" are splats:
/// constants with all elements equal, or a broadcast_in_dim of one.
///
/// Deliberately does not: fold x*0 for floating point (NaN*0 and inf*0 are NaN, so the result
/// is not 0); reassociate or reorder float arithmetic; touch fusion bodies (it runs before
/// fusion). Note x+0 -> x also for floats, as XLA does: it differs only for x = -0.0 (whose
/// sum with +0.0 is +0.0), a sign no training computation depends on.
///
/// Needs: a valid entry computation. Keeps: shapes of every replaced value; removes the
/// instructions it made dead, so users lists stay exact for the fusion passes.
class AlgebraicSimplifyPass final : public Pass {
 public:
  std::string_view name() const override { return "algebraic-simplify"; }
  bool run(ir::Module& module) override;
};

}  // namespace kiln::compiler
