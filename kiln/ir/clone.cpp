// extract_module: copies a computation and, recursively, its callees into a new module.
#include "kiln/ir/clone.h"

#include <unordered_map>

#include "kiln/core/check.h"

namespace kiln::ir {
namespace {

class Cloner {
 public:
  explicit Cloner(Module& into) : into_(into) {}

  void copy(const Computation& from, Computation* to) {
    std::unordered_map<const Instruction*, Instruction*> map;
    for (const Instruction* p : from.parameters()) {
      Instruction* q = to->add_parameter(p->shape(), p->name());
      q->set_source(p->source());
      map[p] = q;
    }
    for (const Instruction* inst : from.post_order()) {
      if (inst->opcode() == Opcode::kParameter) continue;
      std::vector<Instruction*> operands;
      for (const Instruction* op : inst->operands()) operands.push_back(map.at(op));
      Attrs attrs = inst->attrs();
      attrs.body = callee(attrs.body);
      attrs.condition = callee(attrs.condition);
      for (Computation*& b : attrs.branches) b = callee(b);
      Instruction* q = to->add(inst->opcode(), inst->shape(), std::move(operands), std::move(attrs));
      q->set_name(inst->name());
      q->set_source(inst->source());
      map[inst] = q;
    }
    for (const Instruction* out : from.outputs()) to->add_output(map.at(out));
  }

 private:
  Computation* callee(const Computation* c) {
    if (c == nullptr) return nullptr;
    auto it = copies_.find(c);
    if (it != copies_.end()) return it->second;
    Computation* to = into_.add_computation(c->name());
    copies_[c] = to;
    copy(*c, to);
    return to;
  }

  Module& into_;
  std::unordered_map<const Computation*, Computation*> copies_;
};

}  // namespace

std::unique_ptr<Module> extract_module(const Computation& computation, std::string name) {
  auto module = std::make_unique<Module>(std::move(name));
  Cloner(*module).copy(computation, module->entry());
  return module;
}

}  // namespace kiln::ir
