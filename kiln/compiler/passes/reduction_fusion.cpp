// Reduction fusion: a reduce plus the elementwise producers only it reads.
#include "kiln/compiler/passes/reduction_fusion.h"

#include <vector>

#include "kiln/compiler/passes/fusion_builder.h"
#include "kiln/ir/printer.h"

namespace kiln::compiler {

using ir::Instruction;
using ir::Opcode;

bool ReductionFusionPass::run(ir::Module& module) {
  if (target_ != nullptr && !target_->wants_reduction_fusion()) return false;
  ir::Computation& entry = *module.entry();
  std::vector<Instruction*> order = entry.post_order();
  PositionMap position = positions(order);
  bool changed = false;
  for (Instruction* reduce : order) {
    Opcode op = reduce->opcode();
    if (op != Opcode::kReduceSum && op != Opcode::kReduceMax && op != Opcode::kReduceMin) continue;
    std::vector<Instruction*> region = grow_producers(reduce, position);
    if (region.size() == 1) {
      note(str_cat("not fused ", opcode_name(op), " %", reduce->id(), ": its operand %",
                   reduce->operand(0)->id(), " is not an elementwise value only it reads"));
      continue;
    }
    int id = reduce->id();  // the reduce is deleted by make_fusion
    std::vector<const Instruction*> removed;
    Instruction* fusion = make_fusion(entry, region, reduce, ir::FusionKind::kReduction, {}, &removed);
    // Removed members precede `reduce` in post order, so the loop never meets them again, but
    // their addresses may be reused by new instructions: keep `position` free of them.
    for (const Instruction* r : removed) position.erase(r);
    note(str_cat("fused ", opcode_name(op), " %", id, " with ", region.size() - 1,
                 " producers into ", fusion->attrs().body->name()));
    changed = true;
  }
  return changed;
}

}  // namespace kiln::compiler
