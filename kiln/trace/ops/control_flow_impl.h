// Internal to trace/ops (control_flow.cpp, scan.cpp): tracing functions into nested
// computations of the current trace.
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/computation.h"
#include "kiln/trace/ops/control_flow.h"
#include "kiln/trace/trace_context.h"

namespace kiln::trace {

/// A new computation of the current trace, where ops go while this object lives.
class NestedComputation {
 public:
  NestedComputation(TraceContext& ctx, const std::string& name);
  ~NestedComputation() { ctx_.pop_computation(); }
  NestedComputation(const NestedComputation&) = delete;
  NestedComputation& operator=(const NestedComputation&) = delete;

  ir::Computation* computation() const { return computation_; }
  /// A new parameter, as a symbolic tensor.
  Tensor parameter(const Shape& shape, const std::string& name);
  /// One parameter per shape.
  std::vector<Tensor> parameters(const std::vector<Shape>& shapes, const std::string& name);
  /// `values` as instructions of this computation (captures and constants as needed).
  std::vector<ir::Instruction*> lower(const std::vector<Tensor>& values, const std::string& where);

 private:
  TraceContext& ctx_;
  ir::Computation* computation_;
};

/// Computations traced from `fns` that all take parameters of `shapes` then the values they
/// capture, in one order (a while's condition and body, a conditional's branches).
struct TracedComputations {
  std::vector<ir::Computation*> computations;
  /// Per computation: the function's results (not yet its outputs).
  std::vector<std::vector<ir::Instruction*>> results;
  /// The captured values: the trailing operands, in the enclosing computation...
  std::vector<ir::Instruction*> outer;
  /// ...and the tensors the user's functions named (the tape's identity of each).
  std::vector<Tensor> origins;
};
TracedComputations trace_computations(TraceContext& ctx, const std::string& name, const std::vector<Shape>& shapes,
                                      const std::vector<BranchFn>& fns);

std::vector<Shape> shapes_of(const std::vector<Tensor>& values);
/// Symbolic tensors for `instructions` of the current computation.
std::vector<Tensor> wrap_all(const TraceContext& ctx, const std::vector<ir::Instruction*>& instructions);
/// Each tensor, or zeros of its shape where it is undefined (a cotangent that never flowed).
std::vector<Tensor> or_zeros(const std::vector<Tensor>& values, const std::vector<Tensor>& like);

}  // namespace kiln::trace
