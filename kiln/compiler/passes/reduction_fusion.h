// ReductionFusionPass: pulls the elementwise producers of a reduce into one reduction kernel.
#pragma once

#include "kiln/compiler/pass.h"
#include "kiln/compiler/target_info.h"

namespace kiln::compiler {

/// For each reduce_sum/reduce_max/reduce_min, inlines the elementwise chain that computes its
/// operand (elementwise ops, convert, broadcast_in_dim, scalar constants, iota) into a kFusion
/// of kind kReduction whose body's root is the reduce, so the producer values are never
/// written to memory. A producer joins when every user of it is already in the fusion;
/// broadcasts, scalar constants and iota are cheap and are duplicated into the fusion even
/// when other instructions also use them.
///
/// Deliberately does not: fuse argmax (the runtime has its own kernel); absorb a producer that
/// is an output or that has users outside the fusion (it would be computed twice, or the
/// fusion would need two outputs); create a fusion holding the reduce alone; fuse consumers
/// of the reduce (elementwise fusion handles them). Does nothing when the target does not want
/// reduction fusion.
///
/// Needs: DCE before it. Keeps: every output's value.
class ReductionFusionPass final : public Pass {
 public:
  explicit ReductionFusionPass(const TargetInfo* target = nullptr) : target_(target) {}
  std::string_view name() const override { return "reduction-fusion"; }
  bool run(ir::Module& module) override;

 private:
  const TargetInfo* target_;
};

}  // namespace kiln::compiler
