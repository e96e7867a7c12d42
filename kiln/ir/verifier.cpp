// The verifier collects every problem it finds (never stopping at the first) and reports them
// in one InternalError, naming each instruction as "%id opcode" in its computation.
#include "kiln/ir/verifier.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/ir/shape_inference.h"

namespace kiln::ir {
namespace {

std::string label(const Instruction* inst) {
  std::string s = str_cat("%", inst->id(), " ", opcode_name(inst->opcode()));
  if (!inst->source().empty()) s += str_cat(" (", inst->source(), ")");
  return s;
}

class Verifier {
 public:
  explicit Verifier(const Module& module) : module_(module) {
    for (const auto& c : module.computations()) computations_.insert(c.get());
  }

  void run() {
    for (const auto& c : module_.computations()) verify_computation(*c);
    verify_aliases();
    verify_no_recursive_calls();
    if (problems_.empty()) return;
    throw InternalError(str_cat("[verifier] module @", module_.name(), " is malformed (", problems_.size(),
                                " problem", problems_.size() == 1 ? "" : "s",
                                "); this is a bug in Kiln (the pass or builder that made it):\n  - ",
                                str_join(problems_, "\n  - ")));
  }

 private:
  template <typename... Args>
  void fail(const Computation& c, Args&&... args) {
    problems_.push_back(str_cat("in ", c.name(), ": ", std::forward<Args>(args)...));
  }

  void verify_computation(const Computation& c) {
    if (c.module() != &module_) fail(c, "the computation belongs to another module");
    std::unordered_set<const Instruction*> owned;
    for (const auto& inst : c.instructions()) owned.insert(inst.get());
    for (const auto& inst : c.instructions()) verify_instruction(c, *inst, owned);
    verify_parameters(c, owned);
    if (c.outputs().empty()) fail(c, "the computation has no outputs");
    for (size_t i = 0; i < c.outputs().size(); ++i)
      if (!owned.count(c.outputs()[i])) fail(c, "output ", i, " is not an instruction of this computation");
    verify_acyclic(c, owned);
  }

  void verify_instruction(const Computation& c, const Instruction& inst,
                          const std::unordered_set<const Instruction*>& owned) {
    if (inst.parent() != &c) fail(c, label(&inst), " says its parent is another computation");
    bool operands_ok = true;
    for (size_t i = 0; i < inst.operand_count(); ++i) {
      const Instruction* op = inst.operands()[i];
      if (op == nullptr || !owned.count(op)) {
        fail(c, "operand ", i, " of ", label(&inst), " is not an instruction of this computation");
        operands_ok = false;
        continue;
      }
      const auto uses = std::count(inst.operands().begin(), inst.operands().end(), op);
      const auto listed = std::count(op->users().begin(), op->users().end(), &inst);
      if (uses != listed)
        fail(c, label(op), " lists ", label(&inst), " ", listed, " times as a user, but it is used ", uses,
             " times");
    }
    for (const Instruction* user : inst.users())
      if (!owned.count(user) ||
          std::find(user->operands().begin(), user->operands().end(), &inst) == user->operands().end())
        fail(c, label(&inst), " lists a user that does not use it");
    if (operands_ok) verify_shape(c, inst);
    verify_callees(c, inst);
    if (inst.opcode() == Opcode::kFusion) verify_fusion(c, inst);
    if (is_tuple_op(inst.opcode())) verify_tuple_uses(c, inst);
    if (inst.opcode() == Opcode::kGetTupleElement && operands_ok) verify_get_tuple_element(c, inst);
  }

  void verify_callees(const Computation& c, const Instruction& inst) {
    for (const Computation* callee : called_computations(inst.attrs())) {
      if (!computations_.count(callee)) fail(c, label(&inst), " calls ", callee->name(), ", which this module does not own");
      else if (callee == &c) fail(c, label(&inst), " calls its own computation");
    }
  }

  // A while or conditional has no value of its own: only get_tuple_element may read it.
  void verify_tuple_uses(const Computation& c, const Instruction& inst) {
    for (const Instruction* user : inst.users())
      if (user->opcode() != Opcode::kGetTupleElement)
        fail(c, label(&inst), " is used by ", label(user), "; its results are read with get_tuple_element");
    if (std::find(c.outputs().begin(), c.outputs().end(), &inst) != c.outputs().end())
      fail(c, label(&inst), " is an output; output its get_tuple_element results instead");
  }

  void verify_get_tuple_element(const Computation& c, const Instruction& inst) {
    const Instruction* tuple = inst.operand(0);
    if (!is_tuple_op(tuple->opcode()))
      return fail(c, label(&inst), " reads ", label(tuple), ", which is no while or conditional");
    std::vector<Shape> results;
    try {
      results = tuple_result_shapes(*tuple);
    } catch (const Error& e) {
      return fail(c, label(&inst), " reads a malformed ", label(tuple), ": ", e.what());
    }
    const int64_t i = inst.attrs().tuple_index;
    if (i < 0 || i >= static_cast<int64_t>(results.size()))
      fail(c, label(&inst), " reads result ", i, " of ", label(tuple), ", which has ", results.size());
    else if (!(results[static_cast<size_t>(i)] == inst.shape()))
      fail(c, label(&inst), " is ", inst.shape(), " but result ", i, " of ", label(tuple), " is ",
           results[static_cast<size_t>(i)]);
  }

  void verify_shape(const Computation& c, const Instruction& inst) {
    std::vector<Shape> shapes;
    for (const Instruction* op : inst.operands()) shapes.push_back(op->shape());
    try {
      Shape inferred = infer_shape(inst.opcode(), shapes, inst.attrs(), &inst.shape(), inst.source());
      if (!(inferred == inst.shape()))
        fail(c, label(&inst), " declares ", inst.shape(), " but its operands give ", inferred);
    } catch (const Error& e) {
      fail(c, label(&inst), " fails shape inference: ", e.what());
    }
  }

  void verify_fusion(const Computation& c, const Instruction& inst) {
    const Computation* body = inst.attrs().body;
    if (body == nullptr) return fail(c, label(&inst), " has no body");
    if (!computations_.count(body) || body == &c) return;  // verify_callees said why
    if (body->parameters().size() != inst.operand_count())
      fail(c, label(&inst), " passes ", inst.operand_count(), " operands to ", body->name(), ", which takes ",
           body->parameters().size(), " parameters");
    for (size_t i = 0; i < std::min(body->parameters().size(), inst.operand_count()); ++i)
      if (body->parameters()[i] != nullptr && !(body->parameters()[i]->shape() == inst.operand(i)->shape()))
        fail(c, label(&inst), " operand ", i, " is ", inst.operand(i)->shape(), " but ", body->name(),
             " parameter ", i, " is ", body->parameters()[i]->shape());
    if (body->outputs().size() != 1)
      fail(c, label(&inst), " body ", body->name(), " has ", body->outputs().size(), " outputs, expected 1");
    else if (body->outputs()[0] != nullptr && !(body->outputs()[0]->shape() == inst.shape()))
      fail(c, label(&inst), " is ", inst.shape(), " but its body ", body->name(), " returns ",
           body->outputs()[0]->shape());
  }

  void verify_parameters(const Computation& c, const std::unordered_set<const Instruction*>& owned) {
    const auto& params = c.parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      const Instruction* p = params[i];
      if (p == nullptr || !owned.count(p)) {
        fail(c, "parameter ", i, " is not an instruction of this computation");
      } else if (p->opcode() != Opcode::kParameter) {
        fail(c, "parameter slot ", i, " holds ", label(p));
      } else if (p->attrs().parameter_index != static_cast<int64_t>(i)) {
        fail(c, label(p), " has parameter_index ", p->attrs().parameter_index, " but sits at position ", i,
             " (indices must be 0..", params.size() - 1, ")");
      }
    }
    for (const Instruction* inst : owned)
      if (inst->opcode() == Opcode::kParameter && std::find(params.begin(), params.end(), inst) == params.end())
        fail(c, label(inst), " is not in the parameter list");
  }

  // Kahn's algorithm over operand edges: whatever never becomes ready lies on or behind a cycle.
  void verify_acyclic(const Computation& c, const std::unordered_set<const Instruction*>& owned) {
    std::unordered_map<const Instruction*, size_t> pending;
    std::vector<const Instruction*> ready;
    for (const auto& inst : c.instructions()) {
      size_t n = 0;
      for (const Instruction* op : inst->operands()) n += owned.count(op);
      pending[inst.get()] = n;
      if (n == 0) ready.push_back(inst.get());
    }
    size_t done = 0;
    while (!ready.empty()) {
      const Instruction* inst = ready.back();
      ready.pop_back();
      ++done;
      for (const Instruction* user : inst->users())
        if (pending.count(user) && --pending[user] == 0) ready.push_back(user);
    }
    if (done == c.instructions().size()) return;
    std::vector<std::string> stuck;
    for (const auto& inst : c.instructions())
      if (pending[inst.get()] > 0) stuck.push_back(label(inst.get()));
    fail(c, "a cycle runs through ", str_join(stuck, ", "));
  }

  void verify_aliases() {
    const Computation& entry = *module_.entry();
    std::unordered_set<int> outputs, params;
    for (const OutputAlias& a : module_.aliases()) {
      const std::string what = str_cat("alias output ", a.output_index, " -> parameter ", a.parameter_index);
      if (a.output_index < 0 || a.output_index >= static_cast<int>(entry.outputs().size())) {
        fail(entry, what, " names a missing output (there are ", entry.outputs().size(), ")");
      } else if (a.parameter_index < 0 || a.parameter_index >= static_cast<int>(entry.parameters().size())) {
        fail(entry, what, " names a missing parameter (there are ", entry.parameters().size(), ")");
      } else {
        const Instruction* out = entry.outputs()[static_cast<size_t>(a.output_index)];
        const Instruction* param = entry.parameters()[static_cast<size_t>(a.parameter_index)];
        if (out != nullptr && param != nullptr && !(out->shape() == param->shape()))
          fail(entry, what, " joins ", out->shape(), " with ", param->shape(), "; shapes must be equal");
      }
      if (!outputs.insert(a.output_index).second) fail(entry, what, ": output aliased twice");
      if (!params.insert(a.parameter_index).second) fail(entry, what, ": parameter aliased twice");
    }
  }

  // A computation that (indirectly) calls itself would never finish evaluating.
  void verify_no_recursive_calls() {
    std::unordered_set<const Computation*> on_stack, done;
    for (const auto& c : module_.computations()) visit_calls(c.get(), on_stack, done);
  }

  void visit_calls(const Computation* c, std::unordered_set<const Computation*>& on_stack,
                   std::unordered_set<const Computation*>& done) {
    if (done.count(c)) return;
    if (!on_stack.insert(c).second) return fail(*c, "computations call each other in a cycle");
    for (const auto& inst : c->instructions())
      for (const Computation* callee : called_computations(inst->attrs()))
        if (callee != c && computations_.count(callee)) visit_calls(callee, on_stack, done);
    on_stack.erase(c);
    done.insert(c);
  }

  const Module& module_;
  std::unordered_set<const Computation*> computations_;
  std::vector<std::string> problems_;
};

}  // namespace

void verify(const Module& module) { Verifier(module).run(); }

}  // namespace kiln::ir
