// VJP rule tables: one entry per opcode, written with trace ops so the backward pass is IR
// the compiler optimizes. A rule maps the cotangent of an op's output to cotangents of its
// operands; GradientTape walks the recorded ops in reverse and applies them. Internal.
#pragma once

#include <span>
#include <vector>

#include "kiln/ir/attrs.h"
#include "kiln/ir/opcode.h"
#include "kiln/trace/tensor.h"

namespace kiln::trace {

/// One recorded op as a rule sees it: y = op(operands...) with attrs, and dL/dy.
struct VjpArgs {
  ir::Opcode op;
  const ir::Attrs& attrs;
  const std::vector<Tensor>& operands;
  const Tensor& output;
  const Tensor& cotangent;
  /// needs[i]: operand i wants a cotangent (floating and on a path from a source).
  const std::vector<bool>& needs;

  const Tensor& x(size_t i = 0) const { return operands[i]; }
  const Tensor& y() const { return output; }
  const Tensor& g() const { return cotangent; }
};

/// Cotangents per operand; an undefined Tensor means none (not needed or not differentiable).
using Grads = std::vector<Tensor>;
using VjpRule = Grads (*)(const VjpArgs&);

/// A table row. A null rule lists the op as non-differentiable: it stops the gradient (like
/// TensorFlow), its inputs receive nothing from it. An op with no row at all is an error to
/// differentiate through (GradientTape throws CompileError naming it), never a silent zero.
struct VjpEntry {
  ir::Opcode op;
  VjpRule rule;
};

std::span<const VjpEntry> elementwise_vjps();
std::span<const VjpEntry> shape_vjps();
std::span<const VjpEntry> reduce_vjps();
std::span<const VjpEntry> contraction_vjps();
std::span<const VjpEntry> collective_vjps();

/// The row for `op`, or nullptr when no table has one.
const VjpEntry* find_vjp_entry(ir::Opcode op);
/// The rule for `op`, or nullptr when it has none (no row, or a non-differentiable row).
VjpRule find_vjp(ir::Opcode op);

/// Dims as the int axes the reduce ops take.
std::vector<int> to_axes(const Dims& dims);

}  // namespace kiln::trace
