// The CPU lowering's library kernels (cpu_lowerer_impl.h): dot_general on oneDNN's matmul
// (or the fixed-order GEMM), the convolutions on oneDNN's (or the fixed-order one when
// batch-invariant), reduce_window(_grad) on oneDNN's pooling. The dtypes oneDNN has no form
// for run on the reference evaluator (reference_fallbacks.cpp lists them).
#include "kiln/runtime/cpu/cpu_lowerer_impl.h"
#include "kiln/runtime/cpu/fixed_order_convolution.h"
#include "kiln/runtime/cpu/onednn_convolution.h"
#include "kiln/runtime/cpu/onednn_pooling.h"

namespace kiln::cpu::lowering {

bool Lowerer::dot_general(const Instruction& inst) {
  return try_matmul(inst, inst, false, compiler::EpilogueActivation::kNone, "matmul");
}

bool Lowerer::convolution(const Instruction& inst) { return try_convolution(inst); }
bool Lowerer::reduce_window(const Instruction& inst) { return try_pooling(inst); }

bool Lowerer::try_matmul(const Instruction& inst, const Instruction& dot, bool has_bias,
                         compiler::EpilogueActivation activation, std::string label) {
  // Operands whose convert was folded in: the matmul reads the convert's f32 source.
  const auto folded = [&](size_t i) { return i < inst.operand_count() && folded_converts_.count(inst.operand(i)) > 0; };
  const F32Sources f32{folded(0), folded(1), has_bias && folded(2)};
  std::shared_ptr<MatmulKernel> k = MatmulKernel::create(dot, has_bias, activation, options_.matmul, widen_scratch_, f32);
  KILN_CHECK(k != nullptr || !(f32.lhs || f32.rhs || f32.bias), "a matmul folding in a convert has no kernel");
  if (k == nullptr) return false;
  if (k->path() != MatmulPath::kF32) label += str_cat(" (", k->isa(), k->path() == MatmulPath::kWidened ? ", widened" : "", ")");
  if (f32.lhs || f32.rhs || f32.bias) label += " reading f32 operands";
  Step s = make_step(inst, std::move(label));
  for (size_t i = 0; i < 3 && i < s.reads.size(); ++i)
    if (folded(i)) s.reads[i] = exe_.value_id(inst.operand(i)->operand(0));
  const int lhs = 0, rhs = 1, bias = has_bias ? 2 : -1;
  add_step(std::move(s), [k, lhs, rhs, bias](const void* const* in, void* out) {
    k->run(in[lhs], in[rhs], bias >= 0 ? in[bias] : nullptr, out);
  });
  return true;
}

bool Lowerer::try_convolution(const Instruction& inst) {
  if (options_.matmul.batch_invariant) {  // oneDNN's convolutions choose their sum order by shape
    if (std::shared_ptr<FixedOrderConvolution> f = FixedOrderConvolution::create(inst)) {
      add(inst, f->label(), [f](const void* const* in, void* out) { f->run(in, out); });
      return true;
    }
  }
  std::shared_ptr<ConvolutionKernel> k = ConvolutionKernel::create(inst, options_.matmul, widen_scratch_);
  if (k == nullptr) return false;
  add(inst, k->label(), [k](const void* const* in, void* out) { k->run(in, out); });
  return true;
}

bool Lowerer::try_pooling(const Instruction& inst) {
  std::shared_ptr<PoolingKernel> k =
      PoolingKernel::create(inst, options_.matmul.choice != MatmulOptions::Choice::kF32, widen_scratch_);
  if (k == nullptr) return false;
  add(inst, k->label(), [k](const void* const* in, void* out) { k->run(in, out); });
  return true;
}

}  // namespace kiln::cpu::lowering
