// The lowering visitor: one pure virtual handler per op, or per op family where a family is
// lowered as one (the elementwise table's rows, the three convolutions), so a backend that
// forgets an op does not compile (XLA's DfsHloVisitor, MLX's eval_cpu/eval_gpu). The CPU
// (runtime/cpu/cpu_lowerer_impl.h) and CUDA (runtime/cuda/cuda_lowerer_impl.h) lowerings
// implement it. It runs when a program is compiled, once per instruction, never per element.
#pragma once

#include "kiln/ir/instruction.h"

// The handlers, in opcodes.def's order of families: X(name) each.
//   elementwise:    every row of ir/elementwise.def, convert, compare and select
//   reduce:         reduce_sum, reduce_max and reduce_min
//   convolution:    convolution, conv_backward_input and conv_backward_filter
//   reduce_window:  reduce_window and reduce_window_grad (pooling and its gradient)
//   while_loop:     while
// Every other handler is its op's.
#define KILN_LOWERING_HANDLERS(X)                                                          \
  X(parameter) X(constant) X(iota) X(elementwise)                                          \
  X(broadcast_in_dim) X(reshape) X(transpose) X(slice) X(concatenate) X(pad)               \
  X(gather) X(scatter_add) X(dynamic_slice) X(dynamic_update_slice) X(reduce) X(argmax)    \
  X(dot_general) X(convolution) X(reduce_window) X(rng_bits)                              \
  X(all_reduce) X(all_gather) X(reduce_scatter) X(all_to_all) X(collective_permute)        \
  X(fusion) X(while_loop) X(conditional) X(get_tuple_element)

/// Declares every handler as an override, in a backend's lowerer class; the backend defines
/// each in the file of its family (one it leaves out is a link error).
#define KILN_LOWERING_OVERRIDE(name) bool name(const ::kiln::ir::Instruction& inst) override;
#define KILN_LOWERING_VISITOR_OVERRIDES KILN_LOWERING_HANDLERS(KILN_LOWERING_OVERRIDE)

namespace kiln::runtime {

/// Calls the handler of an instruction's op. Each handler returns whether the backend lowered
/// the instruction; what happens to one it did not is the backend's choice, made in one place:
/// the CPU runs the op on the reference evaluator (cpu/reference_fallbacks.h lists where it
/// does by design), the GPU reports it in its CompileError.
class LoweringVisitor {
 public:
  virtual ~LoweringVisitor() = default;

  /// The handler of `inst`'s opcode (a switch over every opcode, with no default).
  bool visit(const ir::Instruction& inst);

 protected:
#define KILN_LOWERING_HANDLER(name) virtual bool name(const ir::Instruction& inst) = 0;
  KILN_LOWERING_HANDLERS(KILN_LOWERING_HANDLER)
#undef KILN_LOWERING_HANDLER
};

}  // namespace kiln::runtime
