// Loop-invariant code motion for while: find the body's invariant instructions, clone them
// before the loop, and pass the ones the rest of the body reads in as new carried values.
#include "kiln/compiler/passes/loop_invariant_hoisting.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "kiln/ir/builder.h"
#include "kiln/ir/printer.h"

namespace kiln::compiler {

using ir::Instruction;
using ir::Opcode;

namespace {

bool movable(Opcode op) {
  switch (op) {
    case Opcode::kParameter: case Opcode::kConstant: case Opcode::kAllReduce: case Opcode::kAllGather:
    case Opcode::kReduceScatter: case Opcode::kAllToAll: case Opcode::kCollectivePermute: case Opcode::kWhile:
    case Opcode::kConditional: case Opcode::kGetTupleElement:
      return false;
#define KILN_SKIP_Leaf
#define KILN_SKIP_Collective
#define KILN_SKIP_Control
#include "kiln/ir/opcode_cases.inc"
    case Opcode::kIota:
      return true;
  }
  return true;
}

// Hoists out of one while; returns the replacement while, or nullptr when nothing moved.
Instruction* hoist(ir::Computation& entry, Instruction* loop, std::vector<std::string>& notes) {
  ir::Computation& body = *loop->attrs().body;
  ir::Computation& condition = *loop->attrs().condition;
  // Invariant: a pass-through parameter, a constant, or a movable op over invariants that
  // depends on at least one parameter (what depends on constants alone is folding's).
  std::unordered_set<const Instruction*> invariant, from_parameter;
  for (size_t i = 0; i < body.parameters().size(); ++i)
    if (body.outputs()[i] == body.parameter(i)) {
      invariant.insert(body.parameter(i));
      from_parameter.insert(body.parameter(i));
    }
  std::vector<Instruction*> order;  // invariant ops, operands first
  for (Instruction* inst : body.post_order()) {
    if (inst->opcode() == Opcode::kConstant) {
      invariant.insert(inst);
      continue;
    }
    if (!movable(inst->opcode())) continue;
    bool all = true, any_parameter = false;
    for (const Instruction* op : inst->operands()) {
      all = all && invariant.count(op) > 0;
      any_parameter = any_parameter || from_parameter.count(op) > 0;
    }
    if (!all || !any_parameter) continue;
    invariant.insert(inst);
    from_parameter.insert(inst);
    order.push_back(inst);
  }
  // The frontier: hoisted ops something left in the body (or an output) still reads.
  std::unordered_set<const Instruction*> hoisted(order.begin(), order.end());
  std::vector<Instruction*> frontier;
  for (Instruction* inst : order) {
    bool read = std::find(body.outputs().begin(), body.outputs().end(), inst) != body.outputs().end();
    for (const Instruction* u : inst->users()) read = read || !hoisted.count(u);
    if (read) frontier.push_back(inst);
  }
  if (frontier.empty()) return nullptr;

  // Clone the invariant ops before the loop: parameters map to the loop's operands.
  std::unordered_map<const Instruction*, Instruction*> outside;
  for (size_t i = 0; i < body.parameters().size(); ++i) outside[body.parameter(i)] = loop->operand(i);
  ir::Builder b(&entry);
  b.set_source(loop->source());
  for (Instruction* inst : body.post_order()) {
    if (inst->opcode() == Opcode::kConstant && invariant.count(inst)) outside[inst] = b.constant(inst->attrs().literal);
    if (!hoisted.count(inst)) continue;
    std::vector<Instruction*> operands;
    for (const Instruction* op : inst->operands()) operands.push_back(outside.at(op));
    Instruction* copy = entry.add(inst->opcode(), inst->shape(), std::move(operands), inst->attrs());
    copy->set_source(inst->source());
    outside[inst] = copy;
  }
  // Each frontier value becomes a new invariant carried value of the body and condition.
  std::vector<Instruction*> operands = loop->operands();
  for (Instruction* inst : frontier) {
    Instruction* p = body.add_parameter(inst->shape(), str_cat("hoisted.", inst->id()));
    condition.add_parameter(inst->shape(), str_cat("hoisted.", inst->id()));
    body.replace_all_uses(inst, p);
    body.add_output(p);
    operands.push_back(outside.at(inst));
    notes.push_back(str_cat("hoisted ", ir::describe(*inst), " out of while %", loop->id()));
  }
  body.remove_dead();
  Instruction* replacement = entry.add(Opcode::kWhile, loop->shape(), std::move(operands), loop->attrs());
  replacement->set_source(loop->source());
  for (Instruction* user : std::vector<Instruction*>(loop->users())) user->replace_operand(0, replacement);
  return replacement;
}

}  // namespace

bool LoopInvariantHoistingPass::run(ir::Module& module) {
  ir::Computation& entry = *module.entry();
  // A body or condition another instruction also calls must keep its signature.
  std::unordered_map<const ir::Computation*, int> callers;
  for (const auto& c : module.computations())
    for (const auto& inst : c->instructions())
      for (const ir::Computation* callee : ir::called_computations(inst->attrs())) ++callers[callee];
  bool changed = false;
  for (Instruction* inst : entry.post_order()) {
    if (inst->opcode() != Opcode::kWhile) continue;
    if (callers[inst->attrs().body] > 1 || callers[inst->attrs().condition] > 1) {
      note(str_cat("not hoisted out of while %", inst->id(), ": its computations have other callers"));
      continue;
    }
    std::vector<std::string> notes;
    if (hoist(entry, inst, notes) == nullptr) continue;
    for (std::string& n : notes) note(std::move(n));
    changed = true;
  }
  if (changed) entry.remove_dead();
  return changed;
}

}  // namespace kiln::compiler
