// Horizontal fusion at lowering: consecutive loop fusions over one index space run as one loop
// kernel with several outputs, so values they share are loaded once and values one computes
// for another stay in registers. Adam's m, v and parameter updates of a variable become one
// pass over memory instead of three (read g, m, v, p; write m, v, p).
//
// It runs after memory planning, so it only groups where the planned buffers allow it: a
// group's loads all come before its stores element by element, which is safe exactly when
// every buffer a group writes is either disjoint from what it reads or read at the same
// element it is written (the planner's in-place reuse). Anything else stays separate.
#pragma once

#include <vector>

#include "kiln/compiler/memory_plan.h"
#include "kiln/ir/module.h"

namespace kiln::cpu {

/// The most operands a grouped kernel reads (what the step passes on the stack).
inline constexpr size_t kMaxGroupOperands = 16;

/// Whether `inst` can be a member of a group: a loop fusion.
bool groupable(const ir::Instruction& inst);

/// Whether `inst` (groupable) may join `group` (members in execution order, none between them
/// but buffer-free instructions) under `plan`.
bool can_join(const std::vector<const ir::Instruction*>& group, const ir::Instruction& inst,
              const compiler::MemoryPlan& plan);

/// A group as one loop body.
struct GroupedLoop {
  const ir::Computation* body;                   // outputs: the members' values, in order
  std::vector<const ir::Instruction*> operands;  // body parameter i reads operands[i]
};

/// Builds the group's body in `scratch`: the members' bodies inlined, a member's value read
/// by a later member taken directly (rounded to its dtype, as its store and load would).
GroupedLoop merge_group(ir::Module& scratch, const std::vector<const ir::Instruction*>& group);

}  // namespace kiln::cpu
