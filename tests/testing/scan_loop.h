// A scan-like while shared by the CPU's and the CUDA backend's control-flow tests: it writes
// one row of a carried buffer per iteration with a dynamic_update_slice, the pattern a backend
// updates in place.
#pragma once

#include "kiln/ir/builder.h"

namespace kiln::testing {

// carried (ys [t, n], i, xs [t, n]): ys[i + shift] = -0.5 * xs[i] (the start clamped so the
// row fits, as XLA clamps), t iterations. With `read_old_ys` the body also adds ys's old row
// 0 into the update, so ys has a second reader and cannot be updated in place.
inline ir::Instruction* row_writing_loop(ir::Builder& b, ir::Instruction* ys, ir::Instruction* xs, int64_t shift, bool read_old_ys) {
  ir::Module& m = *b.computation()->module();
  const Shape& s = ys->shape();
  const int64_t t = s.dims()[0], n = s.dims()[1];
  ir::Computation* body = m.add_computation(str_cat("body", m.computations().size()));
  ir::Builder bb(body);
  ir::Instruction* bys = bb.parameter(s, "ys");
  ir::Instruction* bi = bb.parameter(Shape(DType::kI32, {}), "i");
  ir::Instruction* bxs = bb.parameter(s, "xs");
  ir::Instruction* zero = bb.scalar(0, DType::kI32);
  ir::Instruction* x = bb.dynamic_slice(bxs, {bi, zero}, {1, n});
  ir::Instruction* y = bb.binary(ir::Opcode::kMul, x, bb.full(x->shape(), -0.5));
  if (read_old_ys) y = bb.binary(ir::Opcode::kAdd, y, bb.slice(bys, {0, 0}, {1, n}, {1, 1}));
  ir::Instruction* at = bb.binary(ir::Opcode::kAdd, bi, bb.scalar(static_cast<double>(shift), DType::kI32));
  body->set_outputs({bb.dynamic_update_slice(bys, y, {at, zero}), bb.binary(ir::Opcode::kAdd, bi, bb.scalar(1, DType::kI32)), bxs});
  ir::Computation* cond = m.add_computation(str_cat("cond", m.computations().size()));
  ir::Builder cb(cond);
  cb.parameter(s, "ys");
  ir::Instruction* ci = cb.parameter(Shape(DType::kI32, {}), "i");
  cb.parameter(s, "xs");
  cond->add_output(cb.compare(ir::Comparison::kLt, ci, cb.scalar(static_cast<double>(t), DType::kI32)));
  return b.while_loop({ys, b.scalar(0, DType::kI32), xs}, cond, body, t);
}

}  // namespace kiln::testing
