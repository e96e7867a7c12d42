// The GPU lowering's generated kernels (Lowerer, cuda_lowerer_impl.h): elementwise ops, iota
// and the views (broadcast_in_dim, transpose, slice) as loop kernels, loop and reduction
// fusions, reductions and argmax, rng_bits, and the index ops (pad, concatenate, gather,
// scatter_add, dynamic slices), all in the program's one PTX module.
#include "kiln/runtime/cuda/cuda_lowerer_impl.h"

namespace kiln::cuda::lowering {

bool Lowerer::add_op_loop(const Instruction& inst) { return add_loop(inst, *wrap(inst)->outputs()[0]); }

bool Lowerer::iota(const Instruction& inst) { return add_op_loop(inst); }
bool Lowerer::elementwise(const Instruction& inst) { return add_op_loop(inst); }
bool Lowerer::broadcast_in_dim(const Instruction& inst) { return add_op_loop(inst); }
bool Lowerer::transpose(const Instruction& inst) { return add_op_loop(inst); }
bool Lowerer::slice(const Instruction& inst) { return add_op_loop(inst); }
bool Lowerer::concatenate(const Instruction& inst) { return add_index_op(inst); }
bool Lowerer::pad(const Instruction& inst) { return add_index_op(inst); }
bool Lowerer::gather(const Instruction& inst) { return add_index_op(inst); }
bool Lowerer::scatter_add(const Instruction& inst) { return add_index_op(inst); }
bool Lowerer::dynamic_slice(const Instruction& inst) { return add_index_op(inst); }
bool Lowerer::dynamic_update_slice(const Instruction& inst) { return add_index_op(inst); }
bool Lowerer::reduce(const Instruction& inst) { return add_reduction(inst, inst); }
bool Lowerer::argmax(const Instruction& inst) { return add_reduction(inst, inst); }
bool Lowerer::rng_bits(const Instruction& inst) { return add_rng_bits(inst); }

// A loop fusion as loop kernels, an output fusion on cuDNN or cuBLASLt with its epilogue, a
// reduction fusion as its producer's loop and a reduction kernel.
bool Lowerer::fusion(const Instruction& inst) {
  const ir::Computation& body = *inst.attrs().body;
  if (inst.attrs().fusion_kind == ir::FusionKind::kLoop)
    return body.outputs().size() == 1 && add_loop(inst, *body.outputs()[0]);
  if (inst.attrs().fusion_kind == ir::FusionKind::kOutput) {
    std::optional<compiler::OutputFusionInfo> e = compiler::match_output_fusion(body);
    if (e && e->contraction->opcode() == Opcode::kConvolution) return add_convolution(inst, *e->contraction);
    return e && e->contraction->opcode() == Opcode::kDotGeneral &&
           add_matmul(inst, *e->contraction, e->has_bias, e->activation);
  }
  return body.outputs().size() == 1 && add_reduction(inst, *body.outputs()[0]);
}

int Lowerer::add_rewrite(int source, const Shape& shape, const std::function<Instruction*(ir::Builder&, Instruction*)>& make,
                int dest, const std::string& prefix) {
  ir::Computation* c = scratch_->add_computation(prefix);
  ir::Builder b(c);
  Instruction* t = make(b, b.parameter(shape, ""));
  c->add_output(t);
  if (dest < 0) dest = exe_.add_value(t->shape());
  return add_loop({source}, *t, dest, prefix) ? dest : -1;
}

bool Lowerer::add_reduction(const Instruction& inst, const Instruction& reduce) {
  const Opcode op = reduce.opcode();
  if (op != Opcode::kReduceSum && op != Opcode::kReduceMax && op != Opcode::kReduceMin && op != Opcode::kArgmax)
    return false;
  const Instruction& input = *reduce.operand(0);
  Dims dims = input.shape().dims();
  Dims axes = reduce.attrs().dims;
  std::sort(axes.begin(), axes.end());
  int source = -1;
  if (&reduce == &inst) {
    source = value_.at(&input);
  } else if (input.opcode() == Opcode::kParameter) {
    source = operand_values(inst).at(static_cast<size_t>(input.attrs().parameter_index));
  } else {
    source = exe_.add_value(input.shape());
    if (!add_loop(operand_values(inst), input, source, str_cat(sym_, "k", inst.id(), "_in"))) return false;
  }
  if (!axes.empty() && axes.back() - axes.front() + 1 != static_cast<int64_t>(axes.size())) {
    Dims perm;
    for (size_t d = 0; d < dims.size(); ++d)
      if (!std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d))) perm.push_back(static_cast<int64_t>(d));
    const size_t kept = perm.size();
    perm.insert(perm.end(), axes.begin(), axes.end());
    ir::Computation* c = scratch_->add_computation(str_cat(sym_, "transpose", inst.id()));
    ir::Builder b(c);
    Instruction* moved = b.transpose(b.parameter(input.shape(), "x"), perm);
    c->add_output(moved);
    const int transposed = exe_.add_value(moved->shape());
    if (!add_loop({source}, *moved, transposed, str_cat(sym_, "k", inst.id(), "_transpose"))) return false;
    source = transposed;
    dims = moved->shape().dims();
    axes.clear();
    for (size_t d = kept; d < dims.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  }
  int64_t outer = 1, r = 1, inner = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    (reduced ? r : (axes.empty() || static_cast<int64_t>(d) < axes.front() ? outer : inner)) *= dims[d];
  }
  const ReductionPlan plan = ReductionPlan::choose(outer, r, inner);
  const std::string name = str_cat(sym_, "r", inst.id());
  gpu_kernels_.push_back({name, op == Opcode::kReduceSum ? codegen::GpuKernelOp::kSum
                                : op == Opcode::kReduceMax ? codegen::GpuKernelOp::kMax
                                : op == Opcode::kReduceMin ? codegen::GpuKernelOp::kMin
                                                           : codegen::GpuKernelOp::kArgmax,
                         input.dtype(), inst.dtype(), plan.layout});
  auto kernel = kernels_.emplace_back(std::make_shared<KernelRef>(KernelRef{name}));
  emit({str_cat(ir::opcode_name(op), " kernel ", name, " (", outer, "x", r, "x", inner, ", ", plan.describe(), ")"),
                 {source}, {value_.at(&inst)},
                 [kernel, outer, r, inner, plan](CUstream stream, const CUdeviceptr* in, const CUdeviceptr* out, CUdeviceptr) {
                   if (plan.grid == 0) return;
                   CUdeviceptr src = in[0], dst = out[0];
                   int64_t o = outer, rr = r, i = inner;
                   void* params[] = {&src, &dst, &o, &rr, &i};
                   check(driver().cuLaunchKernel(kernel->function, plan.grid, 1, 1, plan.block_x, plan.block_y, 1, 0, stream,
                                                 params, nullptr),
                         "cuLaunchKernel (reduction)");
                 }});
  return true;
}

bool Lowerer::add_rng_bits(const Instruction& inst) {
  if (size_of(inst.dtype()) != 4) return false;
  const std::string name = str_cat(sym_, "rng", inst.id());
  gpu_kernels_.push_back({name, codegen::GpuKernelOp::kRngBits, inst.operand(0)->dtype(), inst.dtype()});
  auto kernel = kernels_.emplace_back(std::make_shared<KernelRef>(KernelRef{name}));
  const int64_t n = inst.shape().num_elements();
  emit({str_cat("rng_bits kernel ", name, " (", n, " elements)"), operand_values(inst), {value_.at(&inst)},
                 [kernel, n](CUstream stream, const CUdeviceptr* in, const CUdeviceptr* out, CUdeviceptr) {
                   if (n == 0) return;
                   CUdeviceptr key = in[0], dst = out[0];
                   int64_t count = n;
                   void* params[] = {&key, &dst, &count};
                   launch(*kernel, n, params, stream);
                 }});
  return true;
}

bool Lowerer::add_index_op(const Instruction& inst) {
  std::optional<codegen::IndexKernelUnit> unit = codegen::IndexKernelUnit::of(inst, str_cat(sym_, "ix", inst.id()));
  if (!unit) return false;
  if (unit->pointers() > kMaxKernelPointers) {
    why_ = str_cat(unit->pointers() - 1, " operands; a kernel takes at most ", kMaxKernelPointers - 1);
    return false;
  }
  const Opcode op = inst.opcode();
  std::vector<int> reads = operand_values(inst);
  int dest = value_.at(&inst);
  const bool widened = op == Opcode::kScatterAdd && unit->accumulator != inst.dtype();
  const Shape accumulator = inst.shape().with_dtype(unit->accumulator);
  const auto convert = [](DType to) {
    return [to](ir::Builder& b, Instruction* p) { return b.convert(p, to); };
  };
  if (op == Opcode::kScatterAdd || op == Opcode::kDynamicUpdateSlice) {
    reads.erase(reads.begin());  // x: the kernel's destination holds it already
    if (widened) dest = add_rewrite(value_.at(inst.operand(0)), inst.shape(), convert(unit->accumulator), -1,
                                    str_cat(sym_, "k", inst.id(), "_widen"));
    else if (dest != value_.at(inst.operand(0))) add_copy(inst, "copy(x)");  // else in place (add_while)
    if (dest < 0) return false;
  }
  add_index_kernel(inst, *unit, reads, dest);
  return !widened || add_rewrite(dest, accumulator, convert(inst.dtype()), value_.at(&inst), str_cat(sym_, "k", inst.id(), "_narrow")) >= 0;
}

void Lowerer::add_index_kernel(const Instruction& inst, const codegen::IndexKernelUnit& unit, const std::vector<int>& reads,
                      int dest) {
  KILN_CHECK(reads.size() + 1 == unit.pointers(), "index kernel ", unit.name, " takes ", unit.pointers(), " pointers");
  index_kernels_.push_back(unit);
  auto kernel = kernels_.emplace_back(std::make_shared<KernelRef>(KernelRef{unit.name}));
  const int64_t n = unit.threads();
  const size_t count = reads.size();
  emit({str_cat(ir::opcode_name(inst.opcode()), " kernel ", unit.name, " (", n, " threads)"), reads, {dest},
                 [kernel, n, count](CUstream stream, const CUdeviceptr* in, const CUdeviceptr* out, CUdeviceptr) {
                   if (n == 0) return;
                   CUdeviceptr args[kMaxKernelPointers];
                   void* params[kMaxKernelPointers];
                   for (size_t k = 0; k < count; ++k) args[k] = in[k];
                   args[count] = out[0];
                   for (size_t k = 0; k <= count; ++k) params[k] = &args[k];
                   launch(*kernel, n, params, stream);
                 }});
}

bool Lowerer::add_loop(const Instruction& inst, const Instruction& root) {
  return add_loop(operand_values(inst), root, value_.at(&inst), str_cat(sym_, "k", inst.id()));
}

bool Lowerer::add_loop(const std::vector<int>& operands, const Instruction& root, int dest, const std::string& prefix) {
  std::optional<codegen::LoopIr> built = codegen::LoopIr::build(root);
  if (!built) return false;
  for (const codegen::LoopStage& st : built->stages)
    if (st.loads.size() + 1 > kMaxKernelPointers || st.results.size() != 1) return false;
  const codegen::LoopIr& ir = irs_.emplace_back(std::move(*built));
  units_.push_back({&ir, prefix, false});
  std::vector<int> literals, stages;
  for (const HostTensor& lit : ir.literals) literals.push_back(add_constant(lit));
  for (size_t s = 0; s < ir.stages.size(); ++s) {
    const codegen::LoopStage& st = ir.stages[s];
    const bool last = s + 1 == ir.stages.size();
    stages.push_back(last ? dest : exe_.add_value(Shape(st.results.at(0).dtype, st.shape.dims())));
    CudaStep step;
    step.label = str_cat("loop kernel ", codegen::stage_symbol(prefix, s), " (", st.shape.num_elements(), " elements)");
    for (const codegen::LoopLoad& l : st.loads)
      step.reads.push_back(l.kind == codegen::LoopLoad::kParameter ? operands.at(static_cast<size_t>(l.index))
                           : l.kind == codegen::LoopLoad::kLiteral ? literals.at(static_cast<size_t>(l.index))
                                                                   : stages.at(static_cast<size_t>(l.index)));
    step.writes.push_back(stages.back());
    auto kernel = kernels_.emplace_back(std::make_shared<KernelRef>(KernelRef{codegen::stage_symbol(prefix, s)}));
    const int64_t n = st.shape.num_elements();
    const size_t loads = st.loads.size();
    step.run = [kernel, n, loads](CUstream stream, const CUdeviceptr* in, const CUdeviceptr* out, CUdeviceptr) {
      if (n == 0) return;
      CUdeviceptr args[kMaxKernelPointers];
      void* params[kMaxKernelPointers + 1];
      for (size_t k = 0; k < loads; ++k) args[k] = in[k];
      args[loads] = out[0];
      int64_t count = n;
      for (size_t k = 0; k <= loads; ++k) params[k] = &args[k];
      params[loads + 1] = &count;
      launch(*kernel, n, params, stream);
    };
    emit(std::move(step));
  }
  return true;
}

}  // namespace kiln::cuda::lowering
