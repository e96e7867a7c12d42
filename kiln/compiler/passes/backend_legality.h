// Backend legality: the check every backend's compile() runs before lowering, so a user learns
// about every op the chosen backend cannot run at once, at compile time, with where each op
// came from and what to do instead (seed S22).
#pragma once

#include <vector>

#include "kiln/compiler/decision.h"
#include "kiln/compiler/target_info.h"
#include "kiln/ir/module.h"

namespace kiln::compiler {

/// One instruction the target cannot run, with the target's reason and hint.
struct IllegalOp {
  const ir::Instruction* instruction;
  Decision decision;
};

/// Every instruction of `module` that `target` does not support, in program order: the entry
/// computation, with each fusion followed by the instructions of its body.
std::vector<IllegalOp> find_illegal_ops(const ir::Module& module, const TargetInfo& target);

/// Returns when `target` supports every instruction of `module`; otherwise throws one
/// CompileError listing each unsupported op with its source (layer or call site), the reason
/// and the alternative the target suggests.
void check_legality(const ir::Module& module, const TargetInfo& target);

}  // namespace kiln::compiler
