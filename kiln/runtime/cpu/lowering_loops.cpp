// The CPU lowering's generated kernels (cpu_lowerer_impl.h): ops that run as a loop kernel
// (elementwise, iota, the view ops broadcast_in_dim, transpose and slice), reductions on the
// reduction kernel, and argmax and rng_bits as team kernels of their own.
#include "kiln/runtime/cpu/cpu_lowerer_impl.h"
#include "kiln/runtime/cpu/index_kernels.h"
#include "kiln/runtime/cpu/reduce_kernel.h"

namespace kiln::cpu::lowering {

bool Lowerer::try_loop(const Instruction& inst, const ir::Computation& body, const std::string& label) {
  std::shared_ptr<LoopKernel> k = LoopKernel::create(body, options_.engine, &batch_);
  if (k == nullptr) return false;
  add_team(inst, label, k->work(), [k](const void* const* in, void* out) { k->run_team(in, &out); });
  return true;
}

bool Lowerer::try_loop(const Instruction& inst) {
  return try_loop(inst, *wrap(exe_.scratch_module(), inst), str_cat(ir::opcode_name(inst.opcode())));
}

bool Lowerer::try_reduce(const Instruction& inst, const Instruction& reduce, const std::string& label) {
  std::shared_ptr<ReduceKernel> k = ReduceKernel::create(reduce, options_.engine, &batch_);
  if (k == nullptr) return false;
  add_team(inst, label, k->work(), [k](const void* const* in, void* out) { k->run_team(in, out); });
  return true;
}

bool Lowerer::iota(const Instruction& inst) { return try_loop(inst); }
bool Lowerer::elementwise(const Instruction& inst) { return try_loop(inst); }
bool Lowerer::broadcast_in_dim(const Instruction& inst) { return try_loop(inst); }
bool Lowerer::transpose(const Instruction& inst) { return try_loop(inst); }
bool Lowerer::slice(const Instruction& inst) { return try_loop(inst); }

bool Lowerer::reduce(const Instruction& inst) {
  return try_reduce(inst, *wrap(exe_.scratch_module(), inst)->outputs()[0], str_cat(ir::opcode_name(inst.opcode())));
}

bool Lowerer::argmax(const Instruction& inst) {
  Shape in_shape = inst.operand(0)->shape();
  int axis = static_cast<int>(inst.attrs().dims[0]);
  add_team(inst, "argmax", 0, [in_shape, axis](const void* const* in, void* out) {
#pragma omp single
    cpu::argmax(in_shape, axis, in[0], out);
  });
  return true;
}

bool Lowerer::rng_bits(const Instruction& inst) {
  const int64_t count = inst.shape().num_elements();
  add_team(inst, "rng_bits", count, [count](const void* const* in, void* out) {
    rng_bits_team(*static_cast<const int64_t*>(in[0]), count, out);
  });
  return true;
}

}  // namespace kiln::cpu::lowering
