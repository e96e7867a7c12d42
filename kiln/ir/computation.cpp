// Computation and Module bookkeeping: users lists, post order, replacement, dead removal.
#include "kiln/ir/computation.h"

#include <algorithm>
#include <unordered_set>

#include "kiln/core/check.h"
#include "kiln/ir/module.h"

namespace kiln::ir {

void Instruction::replace_operand(size_t i, Instruction* replacement) {
  Instruction* old = operands_.at(i);
  auto& old_users = old->users_;
  auto it = std::find(old_users.begin(), old_users.end(), this);
  KILN_CHECK(it != old_users.end(), "users list of %", old->id(), " lacks %", id_);
  old_users.erase(it);
  operands_[i] = replacement;
  replacement->users_.push_back(this);
}

Instruction* Computation::add(Opcode opcode, Shape shape, std::vector<Instruction*> operands,
                              Attrs attrs) {
  for (Instruction* op : operands)
    KILN_CHECK(op != nullptr && op->parent() == this, "operand of new ", opcode,
               " belongs to another computation");
  if (!is_numeric(shape.dtype()))
    KILN_THROW(DTypeError, "[", opcode, "] a string value (", shape,
               ") cannot enter a compiled program: the IR computes on numbers only. Hint: turn "
               "strings into ids on the host first (StringLookup, TextVectorization, or Hashing "
               "in a Dataset::map, or as a model's first layers).");
  auto inst = std::unique_ptr<Instruction>(new Instruction(
      module_->next_instruction_id(), opcode, std::move(shape), std::move(operands),
      std::move(attrs), this));
  for (Instruction* op : inst->operands_) op->users_.push_back(inst.get());
  instructions_.push_back(std::move(inst));
  return instructions_.back().get();
}

Instruction* Computation::add_parameter(Shape shape, std::string name) {
  Attrs attrs;
  attrs.parameter_index = static_cast<int64_t>(parameters_.size());
  Instruction* p = add(Opcode::kParameter, std::move(shape), {}, std::move(attrs));
  p->set_name(std::move(name));
  parameters_.push_back(p);
  return p;
}

std::vector<Instruction*> Computation::post_order() const {
  std::vector<Instruction*> order;
  std::unordered_set<const Instruction*> done;
  // Iterative DFS: (instruction, next operand to visit).
  std::vector<std::pair<Instruction*, size_t>> stack;
  auto visit = [&](Instruction* root) {
    if (done.count(root)) return;
    stack.emplace_back(root, 0);
    std::unordered_set<const Instruction*> on_stack{root};
    while (!stack.empty()) {
      auto& [inst, next] = stack.back();
      if (next < inst->operands().size()) {
        Instruction* op = inst->operands()[next++];
        if (done.count(op)) continue;
        KILN_CHECK(!on_stack.count(op), "cycle through %", op->id(), " in ", name_);
        on_stack.insert(op);
        stack.emplace_back(op, 0);
      } else {
        done.insert(inst);
        on_stack.erase(inst);
        order.push_back(inst);
        stack.pop_back();
      }
    }
  };
  for (Instruction* p : parameters_) visit(p);
  for (Instruction* out : outputs_) visit(out);
  return order;
}

void Computation::replace_all_uses(Instruction* old, Instruction* replacement) {
  KILN_CHECK(old != replacement, "replacing %", old->id(), " with itself");
  std::vector<Instruction*> users = old->users();
  for (Instruction* user : users)
    for (size_t i = 0; i < user->operands().size(); ++i)
      if (user->operands()[i] == old) user->replace_operand(i, replacement);
  for (Instruction*& out : outputs_)
    if (out == old) out = replacement;
}

void Computation::remove(Instruction* instruction) {
  KILN_CHECK(instruction->users().empty(), "removing %", instruction->id(), " which has users");
  KILN_CHECK(instruction->opcode() != Opcode::kParameter, "removing a parameter");
  KILN_CHECK(std::find(outputs_.begin(), outputs_.end(), instruction) == outputs_.end(),
             "removing output %", instruction->id());
  for (size_t i = 0; i < instruction->operands().size(); ++i) {
    auto& users = instruction->operands()[i]->users_;
    users.erase(std::find(users.begin(), users.end(), instruction));
  }
  auto it = std::find_if(instructions_.begin(), instructions_.end(),
                         [&](const auto& p) { return p.get() == instruction; });
  KILN_CHECK(it != instructions_.end(), "removing %", instruction->id(), " not in ", name_);
  instructions_.erase(it);
}

int Computation::remove_dead() {
  std::vector<Instruction*> live = post_order();
  std::unordered_set<const Instruction*> live_set(live.begin(), live.end());
  int removed = 0;
  // Remove users before their operands: walk creation order backwards repeatedly is O(n^2);
  // instead drop uses of dead instructions first, then erase them all.
  for (auto& inst : instructions_) {
    if (live_set.count(inst.get())) continue;
    for (Instruction* op : inst->operands_) {
      auto& users = op->users_;
      users.erase(std::find(users.begin(), users.end(), inst.get()));
    }
    inst->operands_.clear();
    ++removed;
  }
  std::erase_if(instructions_, [&](const auto& p) { return !live_set.count(p.get()); });
  return removed;
}

Module::Module(std::string name) : name_(std::move(name)) {
  computations_.push_back(std::make_unique<Computation>("entry", this));
}

Computation* Module::add_computation(std::string name) {
  computations_.push_back(std::make_unique<Computation>(std::move(name), this));
  return computations_.back().get();
}

void Module::remove_unused_computations() {
  std::unordered_set<const Computation*> used{entry()};
  // Called computations may nest: keep every one referenced from a used computation.
  bool grew = true;
  while (grew) {
    grew = false;
    for (const auto& c : computations_) {
      if (!used.count(c.get())) continue;
      for (const auto& inst : c->instructions())
        for (Computation* callee : called_computations(inst->attrs()))
          if (used.insert(callee).second) grew = true;
    }
  }
  std::erase_if(computations_, [&](const auto& c) { return !used.count(c.get()); });
}

}  // namespace kiln::ir
