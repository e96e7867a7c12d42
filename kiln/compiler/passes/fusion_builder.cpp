// make_fusion: outlining a region of the entry computation into a fusion body.
#include "kiln/compiler/passes/fusion_builder.h"

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "kiln/compiler/passes/ir_patterns.h"
#include "kiln/core/check.h"
#include "kiln/ir/attrs.h"

namespace kiln::compiler {

using ir::Instruction;

namespace {

// "loop_fusion.3": the first free index for this kind's prefix.
std::string body_name(const ir::Module& module, ir::FusionKind kind) {
  std::unordered_set<std::string> taken;
  for (const auto& c : module.computations()) taken.insert(c->name());
  for (int i = 0;; ++i) {
    std::string name = str_cat(ir::fusion_kind_name(kind), "_fusion.", i);
    if (!taken.count(name)) return name;
  }
}

// The members in post order from `root`, operands left to right: the order the body is built
// in. `externals` receives the values read from outside in first-use order of the same walk
// (for w - lr * g: w, then g).
std::vector<Instruction*> body_order(Instruction* root, const std::unordered_set<const Instruction*>& members,
                                     std::vector<Instruction*>& externals) {
  std::vector<Instruction*> order;
  std::unordered_set<const Instruction*> seen_external;
  std::unordered_set<const Instruction*> done;
  std::vector<std::pair<Instruction*, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [inst, next] = stack.back();
    if (next < inst->operand_count()) {
      Instruction* op = inst->operand(next++);
      if (!members.count(op)) {
        if (seen_external.insert(op).second) externals.push_back(op);
      } else if (!done.count(op)) {
        stack.emplace_back(op, 0);
      }
    } else {
      done.insert(inst);
      order.push_back(inst);
      stack.pop_back();
    }
  }
  return order;
}

}  // namespace

Instruction* make_fusion(ir::Computation& computation, const std::vector<Instruction*>& region,
                         Instruction* root, ir::FusionKind kind,
                         const std::vector<Instruction*>& leading_operands,
                         std::vector<const Instruction*>* removed) {
  ir::Module& module = *computation.module();
  ir::Computation* body = module.add_computation(body_name(module, kind));
  std::unordered_set<const Instruction*> members(region.begin(), region.end());
  KILN_CHECK(members.count(root), "fusion root %", root->id(), " is not in its region");

  std::unordered_map<const Instruction*, Instruction*> mapped;  // outer -> body
  std::vector<Instruction*> fusion_operands;
  auto add_param = [&](Instruction* outer) {
    mapped[outer] = body->add_parameter(outer->shape(), "");
    fusion_operands.push_back(outer);
  };
  for (Instruction* outer : leading_operands) add_param(outer);

  std::vector<Instruction*> externals;
  std::vector<Instruction*> order = body_order(root, members, externals);
  for (Instruction* outer : externals)
    if (!mapped.count(outer)) add_param(outer);
  for (Instruction* inst : order) {
    std::vector<Instruction*> operands;
    for (Instruction* op : inst->operands()) operands.push_back(mapped.at(op));
    Instruction* clone = body->add(inst->opcode(), inst->shape(), std::move(operands), inst->attrs());
    clone->set_name(inst->name());
    clone->set_source(inst->source());
    mapped[inst] = clone;
  }
  body->set_outputs({mapped.at(root)});

  ir::Attrs attrs;
  attrs.body = body;
  attrs.fusion_kind = kind;
  Instruction* fusion = computation.add(ir::Opcode::kFusion, root->shape(), fusion_operands, attrs);
  fusion->set_source(root->source());
  computation.replace_all_uses(root, fusion);
  // Drop members nothing outside reads any more, users before operands.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (!(*it)->users().empty() || is_output(**it)) continue;
    if (removed != nullptr) removed->push_back(*it);
    computation.remove(*it);
  }
  return fusion;
}

PositionMap positions(const std::vector<Instruction*>& post_order) {
  PositionMap position;
  for (size_t i = 0; i < post_order.size(); ++i) position[post_order[i]] = i;
  return position;
}

std::vector<Instruction*> grow_producers(Instruction* root, const PositionMap& position, bool slices_as_views) {
  // Visit candidates latest first: every user of a candidate comes later in post order, so by
  // the time it is popped, every user that will ever join has joined.
  using Item = std::pair<size_t, Instruction*>;
  std::priority_queue<Item> candidates;
  // `interior`: members whose original goes away, so they may count as users of a producer;
  // a duplicated member's original stays, still reading its operands outside.
  std::unordered_set<const Instruction*> interior{root}, queued;
  std::vector<Instruction*> region{root};
  auto is_view = [&](const Instruction& inst) { return slices_as_views && inst.opcode() == ir::Opcode::kSlice; };
  std::unordered_set<const Instruction*> sliced;  // operands of member slices: they stay outside
  auto push_operands = [&](const Instruction* inst) {
    for (Instruction* op : inst->operands()) {
      auto it = position.find(op);
      if (it == position.end() || !(is_loop_fusible(*op) || is_view(*op)) || !queued.insert(op).second) continue;
      candidates.emplace(it->second, op);
    }
  };
  push_operands(root);
  // Candidates pop latest first, so every slice of a candidate has been decided before it.
  while (!candidates.empty()) {
    Instruction* p = candidates.top().second;
    candidates.pop();
    if (sliced.count(p)) continue;
    bool all_users_in = !is_output(*p) &&
        std::all_of(p->users().begin(), p->users().end(),
                    [&](const Instruction* u) { return interior.count(u) > 0; });
    if (!all_users_in && !is_cheap_to_duplicate(*p) && !is_view(*p)) continue;
    if (all_users_in) interior.insert(p);
    region.push_back(p);
    if (is_view(*p)) sliced.insert(p->operand(0));
    else push_operands(p);
  }
  return region;
}

}  // namespace kiln::compiler
