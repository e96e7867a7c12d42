// CSE: hash by (opcode, shape, operands), confirm with full attribute equality.
#include "kiln/compiler/passes/cse.h"

#include <functional>
#include <unordered_map>
#include <vector>

#include "kiln/ir/printer.h"

namespace kiln::compiler {

using ir::Instruction;
using ir::Opcode;

namespace {

bool is_commutative(const Instruction& x) {
  switch (x.opcode()) {
#include "kiln/ir/elementwise_cases.inc"
      // Of the table's rows: add, mul, max and min.
      return x.opcode() == Opcode::kAdd || x.opcode() == Opcode::kMul || x.opcode() == Opcode::kMax ||
             x.opcode() == Opcode::kMin;
    case Opcode::kCompare:
      return x.attrs().comparison == ir::Comparison::kEq || x.attrs().comparison == ir::Comparison::kNe;
#define KILN_SKIP_Unary
#define KILN_SKIP_Binary
#define KILN_SKIP_Compare
#include "kiln/ir/opcode_cases.inc"
    case Opcode::kConvert:
      return false;
  }
  return false;
}

bool same_operands(const Instruction& a, const Instruction& b) {
  if (a.operands() == b.operands()) return true;
  return is_commutative(a) && a.operand_count() == 2 && b.operand_count() == 2 &&
         a.operand(0) == b.operand(1) && a.operand(1) == b.operand(0);
}

bool equivalent(const Instruction& a, const Instruction& b) {
  return a.opcode() == b.opcode() && a.shape() == b.shape() && same_operands(a, b) &&
         a.attrs() == b.attrs();
}

// Order-independent over operands for commutative ops, so both orders land in one bucket.
size_t hash_of(const Instruction& x) {
  size_t h = std::hash<int>()(static_cast<int>(x.opcode()));
  h = h * 31 + std::hash<std::string>()(x.shape().to_string());
  size_t ops = 0;
  for (const Instruction* op : x.operands()) {
    size_t oh = std::hash<int>()(op->id());
    ops = is_commutative(x) ? ops + oh : ops * 1000003 + oh;
  }
  return h * 31 + ops;
}

}  // namespace

bool CsePass::run(ir::Module& module) {
  ir::Computation& entry = *module.entry();
  std::unordered_map<size_t, std::vector<Instruction*>> seen;
  bool changed = false;
  for (Instruction* inst : entry.post_order()) {
    if (inst->opcode() == Opcode::kParameter) continue;
    // Operands were canonicalized earlier in post order, so hashing their ids is exact.
    std::vector<Instruction*>& bucket = seen[hash_of(*inst)];
    Instruction* match = nullptr;
    for (Instruction* candidate : bucket)
      if (equivalent(*candidate, *inst)) match = candidate;
    if (match == nullptr) {
      bucket.push_back(inst);
      continue;
    }
    note(str_cat("merged ", ir::describe(*inst), " into %", match->id()));
    entry.replace_all_uses(inst, match);
    changed = true;
  }
  if (changed) entry.remove_dead();
  return changed;
}

}  // namespace kiln::compiler
