// Small IR predicates shared by the passes: splat constants, cheap-to-duplicate producers,
// and the ops each fusion kind may absorb.
#pragma once

#include <optional>

#include "kiln/ir/instruction.h"

namespace kiln::compiler {

/// The value every element of `inst` holds when it is a constant whose elements are all equal,
/// or a broadcast_in_dim of one (a "splat"); nullopt otherwise.
std::optional<double> splat_value(const ir::Instruction& inst);
/// True when `inst` is a splat of exactly `value`.
bool is_splat(const ir::Instruction& inst, double value);

/// Producers a fusion may copy into each consumer instead of materializing: broadcast_in_dim
/// (index arithmetic), scalar constants, iota and convert (one conversion per read).
bool is_cheap_to_duplicate(const ir::Instruction& inst);

/// Ops a loop (elementwise) fusion body may contain: elementwise ops, broadcast_in_dim,
/// scalar constants and iota.
bool is_loop_fusible(const ir::Instruction& inst);

/// True when `inst` is one of the entry computation's outputs.
bool is_output(const ir::Instruction& inst);

/// True when output element i of `consumer` reads only element i of operand `operand_index`
/// (an elementwise op, a loop fusion whose body uses that parameter only in elementwise
/// ops, or the operand a dynamic_update_slice writes its update into). Such an operand's
/// buffer may be overwritten by the result in place.
bool reads_elementwise(const ir::Instruction& consumer, size_t operand_index);

}  // namespace kiln::compiler
