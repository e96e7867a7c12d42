// The GPU lowering's walk over a program (Lowerer, cuda_lowerer_impl.h): each instruction to
// its handler, the leaves and copies, and the program's one PTX module; the entry points of
// cuda_lowering_impl.h and cuda_backend.h.
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
  const std::vector<int>* outer = bound_;
  bound_ = bound;
  for (const Instruction* inst : c.post_order()) {
    // An op that computes gets its value first: the carried value a body's dynamic_update_slice
    // updates in place (add_while), else a new one. The handlers of parameter, constant,
    // get_tuple_element, while and conditional bind their values themselves.
    const Opcode op = inst->opcode();
    if (op != Opcode::kParameter && op != Opcode::kConstant && op != Opcode::kGetTupleElement && !ir::is_tuple_op(op)) {
      const auto in_place = in_place_.find(inst);
      value_[inst] = in_place != in_place_.end() ? in_place->second : exe_.add_value(inst->shape());
    }
    why_.clear();
    if (!visit(*inst)) ++missing_[why_.empty() ? op_key(*inst) : str_cat(op_key(*inst), " (", why_, ")")];
  }
  bound_ = outer;
}

std::vector<int> Lowerer::operand_values(const Instruction& inst) const {
  std::vector<int> v;
  for (const Instruction* op : inst.operands()) v.push_back(value_.at(op));
  return v;
}

bool Lowerer::parameter(const Instruction& inst) {
  const auto index = static_cast<int>(inst.attrs().parameter_index);
  value_[&inst] = bound_ != nullptr ? bound_->at(static_cast<size_t>(index)) : exe_.add_value(inst.shape(), index);
  return true;
}

bool Lowerer::constant(const Instruction& inst) {
  value_[&inst] = add_constant(inst.attrs().literal);
  return true;
}

bool Lowerer::reshape(const Instruction& inst) { return add_copy(inst, "copy(reshape)"); }

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
