// Reductions. Fast paths: reduced axes form a suffix (each output reduces one contiguous run)
// or a prefix (outputs are columns: rows are accumulated in order). Anything else walks the
// reduced multi-index per output.
#include "kiln/runtime/cpu/reduce_kernel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kiln/compiler/codegen/loop_ir.h"
#include "kiln/core/check.h"
#include "kiln/core/dtype_dispatch.h"
#include "kiln/core/host_tensor.h"
#include "kiln/ir/instruction.h"
#include "kiln/runtime/cpu/cpu_isa_impl.h"
#include "kiln/runtime/cpu/loop_kernel.h"
#include "kiln/runtime/cpu/team_impl.h"

namespace kiln::cpu {
namespace {

// The reduction loops per ISA variant (cpu_isa_impl.h); a fused producer runs its own
// variant (LoopKernel::read).
struct ReduceKernels {
  using Fn = void (*)(ir::Opcode op, const Shape& in_shape, const Dims& axes, const void* data,
                      const LoopKernel* producer, DType out_dtype, void* out);
  Fn f32;  // accumulating in float
  Fn f64;  // in double (f64, i64 and i32 inputs)
};

#define KILN_ISA_BODY "kiln/runtime/cpu/reduce_kernel_exec.inc"
#include "kiln/runtime/cpu/cpu_isa_variants.inc"

const ReduceKernels& reduce_kernels() {
  static const ReduceKernels& k = *KILN_ISA_SELECT(kKernels);
  return k;
}

}  // namespace

ReduceKernel::~ReduceKernel() = default;

std::unique_ptr<ReduceKernel> ReduceKernel::create(const ir::Instruction& reduce, LoopEngine engine,
                                                   LoopJitBatch* batch) {
  std::unique_ptr<ReduceKernel> k(new ReduceKernel());
  k->op_ = reduce.opcode();
  k->in_shape_ = reduce.operand(0)->shape();
  k->out_shape_ = reduce.shape();
  k->axes_ = reduce.attrs().dims;
  const ir::Instruction* x = reduce.operand(0);
  if (x->opcode() == ir::Opcode::kParameter) {
    k->input_parameter_ = static_cast<int>(x->attrs().parameter_index);
  } else {
    k->producer_ = LoopKernel::create_streaming(*x, engine, batch);
    if (k->producer_ == nullptr) return nullptr;
  }
  return k;
}

int64_t ReduceKernel::work() const { return in_shape_.num_elements(); }

void ReduceKernel::run(const void* const* inputs, void* out) const {
  run_on_team(work() >= kParallelThreshold, [&] { run_team(inputs, out); });
}

// Team work: reduce_typed's loops are orphaned `omp for`s.
void ReduceKernel::run_team(const void* const* inputs, void* out) const {
  if (producer_ != nullptr) producer_->prepare_team(inputs);
  const ReduceKernels& k = reduce_kernels();
  const bool wide = codegen::needs_double_registers(in_shape_.dtype());  // i32 sums stay exact
  (wide ? k.f64 : k.f32)(op_, in_shape_, axes_, producer_ == nullptr ? inputs[input_parameter_] : nullptr,
                         producer_.get(), out_shape_.dtype(), out);
}

void argmax(const Shape& in_shape, int axis, const void* in, void* out) {
  const Dims& dims = in_shape.dims();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[static_cast<size_t>(d)];
  for (int d = axis + 1; d < in_shape.rank(); ++d) inner *= dims[static_cast<size_t>(d)];
  const int64_t n = dims[static_cast<size_t>(axis)];
  int32_t* o = static_cast<int32_t*>(out);
  visit_dtype(in_shape.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* x = static_cast<const S*>(in);
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t b = 0; b < inner; ++b) {
        double best = -std::numeric_limits<double>::infinity();
        int32_t best_i = 0;
        for (int64_t i = 0; i < n; ++i) {
          double v = to_double(x[(a * n + i) * inner + b]);
          if (v > best || (v != v && best == best)) {  // the first NaN wins, as a maximum
            best = v;
            best_i = static_cast<int32_t>(i);
          }
        }
        o[a * inner + b] = best_i;
      }
  });
}

}  // namespace kiln::cpu
