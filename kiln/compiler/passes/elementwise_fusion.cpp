// Elementwise (loop) fusion: greedy from consumers to producers, one output per fusion.
#include "kiln/compiler/passes/elementwise_fusion.h"

#include <string>
#include <unordered_set>
#include <vector>

#include "kiln/compiler/passes/fusion_builder.h"

namespace kiln::compiler {

using ir::Instruction;

bool ElementwiseFusionPass::run(ir::Module& module) {
  if (target_ != nullptr && !target_->wants_loop_fusion()) return false;
  ir::Computation& entry = *module.entry();
  std::vector<Instruction*> order = entry.post_order();
  PositionMap position = positions(order);
  std::unordered_set<const Instruction*> fused;  // removed into a fusion: not a root any more
  bool changed = false;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Instruction* root = *it;
    if (fused.count(root) || !ir::is_elementwise(root->opcode())) continue;
    std::vector<Instruction*> region = grow_producers(root, position, /*slices_as_views=*/true);
    int ops = 0;  // elementwise ops other than the root
    for (Instruction* inst : region) ops += (inst != root && ir::is_elementwise(inst->opcode()));
    if (region.size() == 1) continue;  // a lone op gains nothing from a fusion
    std::string what = str_cat(opcode_name(root->opcode()), " %", root->id(), " with ", ops,
                               " elementwise producers and ", region.size() - 1 - static_cast<size_t>(ops),
                               " broadcasts/constants");
    std::vector<const Instruction*> removed;  // the root among them: never dereference again
    Instruction* fusion = make_fusion(entry, region, root, ir::FusionKind::kLoop, {}, &removed);
    fused.insert(removed.begin(), removed.end());
    for (const Instruction* r : removed) position.erase(r);  // a new instruction may reuse the address
    note(str_cat("fused ", what, " into ", fusion->attrs().body->name()));
    changed = true;
  }
  return changed;
}

}  // namespace kiln::compiler
