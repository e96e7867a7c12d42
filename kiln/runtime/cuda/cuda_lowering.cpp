// The GPU lowering's walk over a program (Lowerer, cuda_lowerer_impl.h): each instruction to
// CudaSteps, the generated kernels (loops, reductions, rng_bits, index ops), copies, and the
// program's one PTX module; the entry points of cuda_lowering_impl.h and cuda_backend.h.
#include "kiln/runtime/cuda/cuda_lowering_impl.h"
#include "kiln/runtime/cuda/cuda_lowerer_impl.h"

namespace kiln::cuda::lowering {

void launch(const KernelRef& kernel, int64_t threads, void** params, CUstream stream) {
  const unsigned grid = static_cast<unsigned>((threads + kBlock - 1) / kBlock);
  check(driver().cuLaunchKernel(kernel.function, grid, 1, 1, kBlock, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel");
}

void Lowerer::lower_all() {
  const ir::Module& m = *exe_.lowered_module();
  lower_computation(*m.entry(), nullptr);
  if (!missing_.empty()) {
    std::string ops;
    for (const auto& [op, n] : missing_) ops += str_cat(ops.empty() ? "" : ", ", op, n > 1 ? str_cat(" (x", n, ")") : "");
    KILN_THROW(CompileError, "[cuda] ", label_, ": the cuda backend has no kernel yet for ", ops,
               ". Hint: run this program on the cpu backend (docs/devices.md lists what the GPU runs).");
  }
  std::vector<int> outputs;
  for (const Instruction* o : m.entry()->outputs()) outputs.push_back(value_.at(o));
  exe_.set_outputs(std::move(outputs));
  exe_.plan_arena();
  exe_.hold(scratch_);
  load_kernels();
}

std::string Lowerer::op_key(const Instruction& inst) {
  if (inst.opcode() != Opcode::kFusion) return std::string(ir::opcode_name(inst.opcode()));
  return str_cat("fusion(", ir::fusion_kind_name(inst.attrs().fusion_kind), ")");
}

int Lowerer::add_constant(const HostTensor& literal) {
  int v = -1;
  if (device_ == nullptr) {
    v = exe_.add_value(literal.shape());
  } else {
    runtime::Buffer b = device_->to_device(literal);
    b.ready().wait();
    v = exe_.add_value(literal.shape(), -1, b);
  }
  constants_.insert(v);
  return v;
}

void Lowerer::emit(CudaStep step) {
  if (sink_ != nullptr) sink_->push_back(std::move(step));
  else exe_.add_step(std::move(step));
}

void Lowerer::lower_computation(const ir::Computation& c, const std::vector<int>* bound) {
  for (const Instruction* inst : c.post_order()) {
    const Opcode op = inst->opcode();
    if (op == Opcode::kParameter) {
      const auto index = static_cast<int>(inst->attrs().parameter_index);
      value_[inst] = bound != nullptr ? bound->at(static_cast<size_t>(index)) : exe_.add_value(inst->shape(), index);
    } else if (op == Opcode::kConstant) {
      value_[inst] = add_constant(inst->attrs().literal);
    } else if (op == Opcode::kGetTupleElement) {
      // The tuple's value itself: no copy.
      value_[inst] = tuple_values_.at(inst->operand(0)).at(static_cast<size_t>(inst->attrs().tuple_index));
    } else if (op == Opcode::kWhile) {
      add_while(*inst);
    } else if (op == Opcode::kConditional) {
      add_conditional(*inst);
    } else {
      const auto in_place = in_place_.find(inst);
      value_[inst] = in_place != in_place_.end() ? in_place->second : exe_.add_value(inst->shape());
      why_.clear();
      if (!lower_one(*inst)) ++missing_[why_.empty() ? op_key(*inst) : str_cat(op_key(*inst), " (", why_, ")")];
    }
  }
}

std::vector<int> Lowerer::operand_values(const Instruction& inst) const {
  std::vector<int> v;
  for (const Instruction* op : inst.operands()) v.push_back(value_.at(op));
  return v;
}

bool Lowerer::lower_one(const Instruction& inst) {
  switch (inst.opcode()) {
    case Opcode::kReshape:
      return add_copy(inst, "copy(reshape)");
    case Opcode::kAllReduce:
      // One replica: the sum and the mean are the value itself.
      if (!options_.collectives || options_.collectives->num_replicas() <= 1) return add_copy(inst, "all_reduce(1 replica)");
      return add_nccl_all_reduce(inst);
    case Opcode::kDotGeneral:
      return add_matmul(inst, inst, false, compiler::EpilogueActivation::kNone);
    case Opcode::kFusion: {
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
    case Opcode::kReduceSum: case Opcode::kReduceMax: case Opcode::kReduceMin: case Opcode::kArgmax:
      return add_reduction(inst, inst);
    case Opcode::kRngBits:
      return add_rng_bits(inst);
    case Opcode::kConvolution: case Opcode::kConvBackwardInput: case Opcode::kConvBackwardFilter:
      return add_convolution(inst, inst);
    case Opcode::kReduceWindow: case Opcode::kReduceWindowGrad:
      return add_pooling(inst);
    case Opcode::kPad: case Opcode::kConcatenate: case Opcode::kGather: case Opcode::kScatterAdd:
    case Opcode::kDynamicSlice: case Opcode::kDynamicUpdateSlice:
      return add_index_op(inst);
    default:
      return add_loop(inst, *wrap(inst)->outputs()[0]);  // elementwise, broadcast, slice, ...
  }
}

const ir::Computation* Lowerer::wrap(const Instruction& inst) {
  ir::Computation* c = scratch_->add_computation(str_cat(sym_, "op", inst.id()));
  ir::Builder b(c);
  std::vector<Instruction*> params;
  for (const Instruction* op : inst.operands()) params.push_back(b.parameter(op->shape(), ""));
  c->add_output(b.add(inst.opcode(), params, inst.attrs(), &inst.shape()));
  return c;
}

bool Lowerer::add_copy(const Instruction& inst, const char* label) {
  emit({label, operand_values(inst), {value_.at(&inst)}, copy_run(static_cast<size_t>(inst.shape().byte_size()))});
  return true;
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

void Lowerer::load_kernels() {
  if (units_.empty() && gpu_kernels_.empty() && index_kernels_.empty()) return;
  const codegen::CodegenTarget target = codegen::CodegenTarget::nvptx(compute_capability_);
  std::string key;
  for (const codegen::LoopUnit& u : units_) key += str_cat(u.prefix, "\n", u.ir->key(), "\n");
  for (const codegen::GpuKernelUnit& u : gpu_kernels_)
    key += str_cat(u.name, " ", static_cast<int>(u.op), " ", name(u.input), " ", name(u.output), " ", static_cast<int>(u.layout), "\n");
  for (const codegen::IndexKernelUnit& u : index_kernels_) key += str_cat(u.key(), "\n");
  codegen::KernelCache cache(options_.debug.kernel_cache_dir, target.cache_tag());
  std::optional<std::string> ptx = cache.enabled() ? cache.load(key) : std::nullopt;
  if (!ptx) {
    ptx = codegen::generate_loop_code(units_, target, false, KILN_CUDA_LIBDEVICE, gpu_kernels_, index_kernels_).binary;
    if (cache.enabled()) cache.store(key, *ptx);
  }
  ptx_ = *ptx;
  if (device_ == nullptr) return;
  device_->make_current();
  CUmodule module = nullptr;
  check(driver().cuModuleLoadData(&module, ptx_.c_str()), "cuModuleLoadData (the generated PTX)");
  exe_.hold(std::shared_ptr<void>(module, [](void* m) { driver().cuModuleUnload(static_cast<CUmodule>(m)); }));
  for (const std::shared_ptr<KernelRef>& k : kernels_)
    check(driver().cuModuleGetFunction(&k->function, module, k->symbol.c_str()), "cuModuleGetFunction");
}

}  // namespace kiln::cuda::lowering

namespace kiln::cuda {

void lower(CudaExecutable& exe, CudaDevice& device, const runtime::CompileOptions& options) {
  lowering::Lowerer(exe, &device, device.compute_capability(), options).lower_all();
}

GpuLowering lower_without_gpu(const ir::Module& optimized, int compute_capability, const runtime::CompileOptions& options) {
  CudaExecutable exe(ir::extract_module(*optimized.entry(), optimized.name()), nullptr);
  lowering::Lowerer lowerer(exe, nullptr, compute_capability, options);
  lowerer.lower_all();
  return {lowerer.ptx(), exe.describe(), exe.planned_peak_bytes()};
}

std::string lower_to_ptx(const ir::Module& optimized, int compute_capability, const runtime::CompileOptions& options) {
  return lower_without_gpu(optimized, compute_capability, options).ptx;
}

}  // namespace kiln::cuda
