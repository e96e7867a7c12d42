// Shape and dtype inference for every op: checks the operands and returns the result shape,
// or throws ShapeError/DTypeError saying which op, what was expected and what was received.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "kiln/core/shape.h"
#include "kiln/ir/attrs.h"
#include "kiln/ir/opcode.h"

namespace kiln::ir {

class Instruction;

/// Infers the result shape of `op` applied to `operands` with `attrs`. Ops whose result is
/// not a function of their operands (parameter, constant, iota, reshape, broadcast_in_dim,
/// convert, rng_bits, conv_backward_*) take it from `declared` and check it for consistency.
/// `where` prefixes messages (a layer or call site); empty means the op name alone.
Shape infer_shape(Opcode op, std::span<const Shape> operands, const Attrs& attrs,
                  const Shape* declared, const std::string& where = {});

/// The own value of a while or conditional: they have no single result (get_tuple_element
/// reads each), so a placeholder u8[0] that takes no bytes.
Shape tuple_placeholder_shape();
/// The shapes of the results of a while (its carried values) or conditional (its branches').
std::vector<Shape> tuple_result_shapes(const Instruction& tuple);

/// Output spatial size of a strided, padded, dilated window: floor((in+lo+hi-eff)/stride)+1.
int64_t windowed_output_size(int64_t in, int64_t window, int64_t stride, int64_t pad_low,
                             int64_t pad_high, int64_t dilation);

}  // namespace kiln::ir
