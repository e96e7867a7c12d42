// Constant folding through the reference evaluator, with splat-aware folding of elementwise ops.
#include "kiln/compiler/passes/constant_folding.h"

#include <vector>

#include "kiln/ir/builder.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/reference_eval.h"

namespace kiln::compiler {

using ir::Instruction;
using ir::Opcode;

namespace {

bool never_folded(Opcode op) {
  switch (op) {
    case Opcode::kParameter: case Opcode::kConstant: case Opcode::kIota: case Opcode::kRngBits:
    case Opcode::kAllReduce: case Opcode::kAllGather: case Opcode::kReduceScatter: case Opcode::kAllToAll:
    case Opcode::kCollectivePermute: case Opcode::kFusion: case Opcode::kBroadcastInDim:
    case Opcode::kWhile: case Opcode::kConditional: case Opcode::kGetTupleElement:
      return true;
#define KILN_SKIP_Leaf
#define KILN_SKIP_Random
#define KILN_SKIP_Collective
#define KILN_SKIP_Fusion
#define KILN_SKIP_Control
#define KILN_SKIP_Shape
#include "kiln/ir/opcode_cases.inc"
    case Opcode::kReshape: case Opcode::kTranspose: case Opcode::kSlice: case Opcode::kConcatenate:
    case Opcode::kPad:
      return false;
  }
  return false;
}

// The scalar constant behind a splat operand: a rank-0 constant, or a broadcast of one.
Instruction* scalar_source(Instruction* x) {
  if (x->opcode() == Opcode::kBroadcastInDim) x = x->operand(0);
  return x->opcode() == Opcode::kConstant && x->shape().is_scalar() ? x : nullptr;
}

}  // namespace

bool ConstantFoldingPass::run(ir::Module& module) {
  ir::Computation& entry = *module.entry();
  ir::Builder b(&entry);
  bool changed = false;
  for (Instruction* inst : entry.post_order()) {
    if (never_folded(inst->opcode()) || inst->operand_count() == 0) continue;
    b.set_source(inst->source());

    // op(broadcast(a), broadcast(b)) -> broadcast(op(a, b)): fold on scalars, keep the splat.
    if (ir::is_elementwise(inst->opcode()) && !inst->shape().is_scalar()) {
      std::vector<HostTensor> scalars;
      for (Instruction* op : inst->operands())
        if (Instruction* s = scalar_source(op)) scalars.push_back(s->attrs().literal);
      if (scalars.size() == inst->operand_count()) {
        ir::Attrs attrs = inst->attrs();
        Shape scalar_shape = inst->shape().with_dims({});
        ir::Module scratch("fold");
        ir::Computation& c = *scratch.entry();
        std::vector<Instruction*> leaves;
        for (const HostTensor& s : scalars) {
          ir::Attrs la;
          la.literal = s;
          leaves.push_back(c.add(Opcode::kConstant, s.shape(), {}, la));
        }
        Instruction* scalar_op = c.add(inst->opcode(), scalar_shape, leaves, attrs);
        Instruction* folded = b.constant(ir::evaluate_instruction(*scalar_op, scalars));
        Instruction* splat = b.broadcast_in_dim(folded, inst->shape().dims(), {});
        note(str_cat("folded splat ", ir::describe(*inst), " -> broadcast of ", ir::describe(*folded)));
        entry.replace_all_uses(inst, splat);
        changed = true;
        continue;
      }
    }

    bool all_constant = true;
    int64_t operand_elements = 0;
    for (Instruction* op : inst->operands()) {
      all_constant = all_constant && op->opcode() == Opcode::kConstant;
      operand_elements += op->shape().num_elements();
    }
    if (!all_constant) continue;
    if (inst->shape().num_elements() > max_elements_ || operand_elements > max_operand_elements_) {
      note(str_cat("not folded ", ir::describe(*inst), ": result has ", inst->shape().num_elements(),
                   " elements, operands ", operand_elements, " (limits ", max_elements_, ", ",
                   max_operand_elements_, ")"));
      continue;
    }
    std::vector<HostTensor> values;
    for (Instruction* op : inst->operands()) values.push_back(op->attrs().literal);
    Instruction* folded = b.constant(ir::evaluate_instruction(*inst, values));
    note(str_cat("folded ", ir::describe(*inst)));
    entry.replace_all_uses(inst, folded);
    changed = true;
  }
  if (changed) entry.remove_dead();
  return changed;
}

}  // namespace kiln::compiler
