// make_fusion: moves a set of entry instructions into a new fusion body and replaces them by
// one kFusion instruction. Shared by the three fusion passes.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "kiln/ir/module.h"

namespace kiln::compiler {

/// Outlines `region` (instructions of `computation`, any order, all producers of `root`) into a
/// new body computation whose single output is `root`, and replaces every use of `root` by a
/// kFusion of `kind`. Body parameters follow `leading_operands` first, then every other value
/// the region reads from outside, in first-use order of a post-order walk from `root`
/// (operands left to right); the fusion's operands are those values in the same order. Non-root members whose value is still used outside the
/// region (cheap producers duplicated into the fusion) stay; the others are removed.
/// Returns the fusion instruction; `removed`, when given, receives the deleted members.
ir::Instruction* make_fusion(ir::Computation& computation, const std::vector<ir::Instruction*>& region,
                             ir::Instruction* root, ir::FusionKind kind,
                             const std::vector<ir::Instruction*>& leading_operands = {},
                             std::vector<const ir::Instruction*>* removed = nullptr);

/// Positions of a computation's instructions in its post order.
using PositionMap = std::unordered_map<const ir::Instruction*, size_t>;
PositionMap positions(const std::vector<ir::Instruction*>& post_order);

/// The loop-fusible producers (is_loop_fusible) that can be fused into a kernel rooted at
/// `root`: a producer joins when it is not an output and all its users are already in, or
/// when it is cheap to duplicate (is_cheap_to_duplicate). With `slices_as_views`, a slice
/// joins too (duplicated where other users need it: it is an offset and strides in the
/// kernel's loads) as a leaf: its operand stays outside, since a loop kernel reads a slice
/// only of a value it loads (codegen/loop_ir.h). Returns root and producers; instructions
/// missing from `position` never join.
std::vector<ir::Instruction*> grow_producers(ir::Instruction* root, const PositionMap& position,
                                             bool slices_as_views = false);

}  // namespace kiln::compiler
