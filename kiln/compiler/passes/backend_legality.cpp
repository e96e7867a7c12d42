// Collects the target's "no" decisions over the whole module and turns them into one message;
// identical lines (the same op from the same source for the same reason) are counted once.
#include "kiln/compiler/passes/backend_legality.h"

#include <algorithm>
#include <string>
#include <utility>

#include "kiln/core/check.h"

namespace kiln::compiler {
namespace {

void collect(const ir::Computation& computation, const TargetInfo& target, std::vector<IllegalOp>& out) {
  for (const ir::Instruction* inst : computation.post_order()) {
    if (inst->opcode() == ir::Opcode::kParameter) continue;
    Decision d = target.supports(*inst);
    if (!d) out.push_back({inst, std::move(d)});
    if (inst->opcode() == ir::Opcode::kFusion && inst->attrs().body != nullptr)
      collect(*inst->attrs().body, target, out);
  }
}

std::string describe_op(const IllegalOp& op) {
  const ir::Instruction& inst = *op.instruction;
  std::string line = str_cat(ir::opcode_name(inst.opcode()), " ", inst.shape(), " from ",
                             inst.source().empty() ? "an unknown source" : inst.source());
  if (!op.decision.reason().empty()) line += str_cat(": ", op.decision.reason());
  if (!op.decision.hint().empty()) line += str_cat(". Hint: ", op.decision.hint());
  return line;
}

}  // namespace

std::vector<IllegalOp> find_illegal_ops(const ir::Module& module, const TargetInfo& target) {
  std::vector<IllegalOp> out;
  collect(*module.entry(), target, out);
  return out;
}

void check_legality(const ir::Module& module, const TargetInfo& target) {
  const std::vector<IllegalOp> illegal = find_illegal_ops(module, target);
  if (illegal.empty()) return;
  std::vector<std::pair<std::string, int>> lines;  // first-seen order, with repeat counts
  for (const IllegalOp& op : illegal) {
    std::string line = describe_op(op);
    auto it = std::find_if(lines.begin(), lines.end(), [&](const auto& l) { return l.first == line; });
    if (it == lines.end()) lines.emplace_back(std::move(line), 1);
    else ++it->second;
  }
  std::string listing;
  for (const auto& [line, count] : lines)
    listing += str_cat("\n  - ", line, count > 1 ? str_cat(" (", count, " times)") : "");
  KILN_THROW(CompileError, "[", target.name(), " backend] cannot compile module @", module.name(), ": ",
             illegal.size(), illegal.size() == 1 ? " op is" : " ops are",
             " not supported; expected only ops this backend runs, received:", listing,
             "\nHint: replace the ops above as suggested, or choose a backend that runs them.");
}

}  // namespace kiln::compiler
