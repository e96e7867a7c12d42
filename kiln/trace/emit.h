// emit: the single place an op is applied to Tensors. Inside a trace it appends a checked
// instruction to the current TraceContext; outside one it runs the op eagerly. Either way it
// records the op on the active gradient tapes. Every function in trace/ops goes through here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/attrs.h"
#include "kiln/ir/opcode.h"
#include "kiln/trace/tensor.h"

namespace kiln::trace {

/// Applies `op` with `attrs` to `operands`. `declared` gives the result shape of ops whose
/// result is not implied by their operands (reshape, convert, iota, ...).
Tensor emit(ir::Opcode op, const std::vector<Tensor>& operands, ir::Attrs attrs = {},
            const Shape* declared = nullptr);

/// A tensor holding `value`: concrete outside a trace, a constant instruction inside one.
Tensor constant(HostTensor value);
/// A tensor of `shape` with every element `value` (a broadcast scalar constant in a trace).
Tensor full(const Shape& shape, double value);

/// "[scope/op]" style prefix for messages of `op_name` called now.
std::string where(std::string_view op_name);

}  // namespace kiln::trace
