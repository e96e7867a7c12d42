// ReduceKernel: reduce_sum/max/min over any axes, with the elementwise producers of its
// input fused in (a reduction-fusion body), and ArgmaxKernel. Results are deterministic:
// every output element is reduced in a fixed order, whatever the thread count.
#pragma once

#include <memory>

#include "kiln/core/shape.h"
#include "kiln/ir/computation.h"
#include "kiln/runtime/cpu/loop_kernel.h"

namespace kiln::cpu {

class ReduceKernel {
 public:
  /// `reduce` is a reduce_* instruction whose operand is a parameter of its computation or an
  /// elementwise expression of them. Returns nullptr if that expression cannot be compiled.
  /// A fused producer's code is generated with `batch` (loop_kernel.h) when one is given.
  static std::unique_ptr<ReduceKernel> create(const ir::Instruction& reduce, LoopEngine engine = default_loop_engine(),
                                              LoopJitBatch* batch = nullptr);
  ~ReduceKernel();
  /// inputs[i] points at parameter i of the reduce's computation. Runs on its own team, or on
  /// the caller's when called inside one.
  void run(const void* const* inputs, void* out) const;
  /// Team work (team_impl.h): every thread of the current team calls it.
  void run_team(const void* const* inputs, void* out) const;
  /// Input elements read per run (sizes the team).
  int64_t work() const;

 private:
  ReduceKernel() = default;
  ir::Opcode op_;
  Shape in_shape_, out_shape_;
  Dims axes_;
  int input_parameter_ = -1;             // the operand is this parameter, read directly
  std::unique_ptr<LoopKernel> producer_;  // or it is computed by this kernel first
};

/// out[...] = index of the first maximum along `axis` (i32).
void argmax(const Shape& in_shape, int axis, const void* in, void* out);

}  // namespace kiln::cpu
