// The GPU lowering's library calls (Lowerer, cuda_lowerer_impl.h): matmuls on cuBLASLt,
// convolutions and pooling on cuDNN with the layout changes and padding they need, and output
// fusions' epilogues: the handlers of dot_general, the convolutions and reduce_window (NCCL's
// collectives are cuda_lowering_collectives.cpp's).
#include "kiln/runtime/cuda/cuda_lowerer_impl.h"

namespace kiln::cuda::lowering {

bool Lowerer::dot_general(const Instruction& inst) {
  return add_matmul(inst, inst, false, compiler::EpilogueActivation::kNone);
}
bool Lowerer::convolution(const Instruction& inst) { return add_convolution(inst, inst); }
bool Lowerer::reduce_window(const Instruction& inst) { return add_pooling(inst); }

bool Lowerer::add_matmul(const Instruction& inst, const Instruction& dot, bool bias, compiler::EpilogueActivation act) {
  std::optional<MatmulGeometry> g = MatmulGeometry::of(dot, why_);
  if (!g) return false;
  const bool in_matmul = (act == compiler::EpilogueActivation::kNone ||
                          (act == compiler::EpilogueActivation::kRelu && g->k > 0)) &&
                         (!bias || (g->batch == 1 && g->k > 0)) && inst.dtype() == dot.dtype();
  std::vector<int> reads = operand_values(inst);
  int dest = value_.at(&inst);
  if (in_matmul) {
    g->bias = bias;
    g->relu = act == compiler::EpilogueActivation::kRelu;
  } else {
    reads = {contraction_operand(inst, dot, 0), contraction_operand(inst, dot, 1)};
    dest = exe_.add_value(dot.shape());
  }
  if (g->k == 0 || dot.shape().num_elements() == 0) {
    const size_t bytes = static_cast<size_t>(dot.shape().byte_size());
    emit({str_cat("zeros(empty matmul ", g->m, "x", g->n, "x0)"), {}, {dest},
                   [bytes](CUstream s, const CUdeviceptr*, const CUdeviceptr* out, CUdeviceptr) {
                     if (bytes > 0) check(driver().cuMemsetD8Async(out[0], 0, bytes, s), "cuMemsetD8Async (empty matmul)");
                   }});
    return in_matmul || add_epilogue(inst, dot, dest);
  }
  std::shared_ptr<CublasLtMatmul> plan;
  if (device_ != nullptr) {
    device_->make_current();
    plan = std::make_shared<CublasLtMatmul>(*g);
  }
  const bool with_bias = g->bias;
  emit({g->label(), reads, {dest},
                 [plan, with_bias](CUstream s, const CUdeviceptr* in, const CUdeviceptr* out, CUdeviceptr workspace) {
                   plan->run(s, in[0], in[1], with_bias ? in[2] : 0, out[0], workspace);
                 }});
  return in_matmul || add_epilogue(inst, dot, dest);
}

int Lowerer::contraction_operand(const Instruction& inst, const Instruction& contraction, size_t i) const {
  if (&inst == &contraction) return value_.at(inst.operand(i));
  return operand_values(inst).at(static_cast<size_t>(contraction.operand(i)->attrs().parameter_index));
}

bool Lowerer::add_convolution(const Instruction& inst, const Instruction& conv) {
  std::optional<ConvGeometry> g = ConvGeometry::of(conv, why_);
  if (!g) return false;
  const bool filter_out = g->op == Opcode::kConvBackwardFilter, data_out = g->op == Opcode::kConvBackwardInput;
  const bool fused = &conv != &inst, padded = g->padded_explicitly();
  if (fused && padded && data_out) {  // epilogue fusion takes forward convolutions only
    why_ = "an explicitly padded data gradient with an epilogue";
    return false;
  }
  const Shape hwio(g->dtype, g->w), krsc(g->dtype, {g->w[3], g->w[0], g->w[1], g->w[2]});
  const Shape cudnn_x(g->dtype, g->x);
  const Dims pad_low = {0, g->explicit_low[0], g->explicit_low[1], 0};
  int a = contraction_operand(inst, conv, 0), b = contraction_operand(inst, conv, 1);
  if (!filter_out && (b = add_transpose(b, hwio, {3, 0, 1, 2}, -1, str_cat(sym_, "k", inst.id(), "_krsc"))) < 0) return false;
  if (padded && !data_out) a = add_spatial_pad(a, g->dtype, g->op_x, g->x, pad_low, /*lowest=*/false);
  const int result = filter_out ? exe_.add_value(krsc)
                     : data_out && padded ? exe_.add_value(cudnn_x)
                     : fused ? exe_.add_value(conv.shape())
                             : value_.at(&inst);
  std::shared_ptr<CudnnConvolution> plan;
  std::string label = g->label();
  if (device_ != nullptr) {
    device_->make_current();
    plan = std::make_shared<CudnnConvolution>(*g, device_->ordinal());
    exe_.need_workspace(plan->workspace_bytes());
    label += str_cat(" ", plan->algorithm());
  }
  emit({label, {a, b}, {result},
                 [plan](CUstream s, const CUdeviceptr* in, const CUdeviceptr* out, CUdeviceptr workspace) {
                   plan->run(s, in[0], in[1], out[0], workspace);
                 }});
  if (filter_out) return add_transpose(result, krsc, {1, 2, 3, 0}, value_.at(&inst), str_cat(sym_, "k", inst.id(), "_hwio")) >= 0;
  if (data_out && padded) {
    Dims limits = g->op_x;
    for (size_t i = 0; i < 2; ++i) limits[1 + i] += g->explicit_low[i];
    const auto slice = [&](ir::Builder& sb, Instruction* dx) { return sb.slice(dx, pad_low, limits, {1, 1, 1, 1}); };
    return add_rewrite(result, cudnn_x, slice, value_.at(&inst), str_cat(sym_, "k", inst.id(), "_slice")) >= 0;
  }
  return !fused || add_epilogue(inst, conv, result);
}

int Lowerer::add_transpose(int source, const Shape& shape, const Dims& permutation, int dest, const std::string& prefix) {
  return add_rewrite(source, shape, [&](ir::Builder& b, Instruction* p) { return b.transpose(p, permutation); }, dest,
                     prefix);
}

int Lowerer::add_spatial_pad(int source, DType t, const Dims& from, const Dims& to, const Dims& low, bool lowest) {
  const int dest = exe_.add_value(Shape(t, to));
  const size_t es = static_cast<size_t>(size_of(t));
  const size_t bytes = static_cast<size_t>(Shape(t, to).byte_size());
  CUDA_MEMCPY3D copy{};
  copy.srcMemoryType = copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcPitch = static_cast<size_t>(from[2] * from[3]) * es;
  copy.srcHeight = static_cast<size_t>(from[1]);
  copy.dstXInBytes = static_cast<size_t>(low[2] * to[3]) * es;
  copy.dstY = static_cast<size_t>(low[1]);
  copy.dstPitch = static_cast<size_t>(to[2] * to[3]) * es;
  copy.dstHeight = static_cast<size_t>(to[1]);
  copy.WidthInBytes = copy.srcPitch;
  copy.Height = copy.srcHeight;
  copy.Depth = static_cast<size_t>(from[0]);
  const bool empty = Shape(t, from).num_elements() == 0;
  // -inf's bits: f32 0xff800000, bf16 0xff80, f16 0xfc00.
  const unsigned fill16 = t == DType::kBF16 ? 0xff80u : 0xfc00u;
  emit({str_cat("pad(", Shape(t, from), " -> ", Shape(t, to), lowest ? ", -inf" : ", 0", ", memset + 3D copy)"),
                 {source}, {dest},
                 [=](CUstream s, const CUdeviceptr* in, const CUdeviceptr* out, CUdeviceptr) {
                   const Driver& d = driver();
                   if (!lowest) check(d.cuMemsetD8Async(out[0], 0, bytes, s), "cuMemsetD8Async (pad)");
                   else if (es == 4) check(d.cuMemsetD32Async(out[0], 0xff800000u, bytes / 4, s), "cuMemsetD32Async (pad)");
                   else check(d.cuMemsetD16Async(out[0], static_cast<unsigned short>(fill16), bytes / 2, s), "cuMemsetD16Async (pad)");
                   if (empty) return;
                   CUDA_MEMCPY3D c = copy;
                   c.srcDevice = in[0];
                   c.dstDevice = out[0];
                   check(d.cuMemcpy3DAsync(&c, s), "cuMemcpy3DAsync (pad)");
                 }});
  return dest;
}

bool Lowerer::add_epilogue(const Instruction& fusion, const Instruction& contraction, int contraction_value) {
  ir::Computation* c = scratch_->add_computation(str_cat(sym_, "epilogue", fusion.id()));
  ir::Builder b(c);
  const std::vector<int> fusion_operands = operand_values(fusion);
  std::vector<int> operands = {contraction_value};
  std::unordered_map<const Instruction*, Instruction*> copied = {{&contraction, b.parameter(contraction.shape(), "")}};
  std::function<Instruction*(const Instruction*)> copy = [&](const Instruction* i) {
    if (auto it = copied.find(i); it != copied.end()) return it->second;
    Instruction* made = nullptr;
    if (i->opcode() == Opcode::kParameter) {
      made = b.parameter(i->shape(), "");
      operands.push_back(fusion_operands.at(static_cast<size_t>(i->attrs().parameter_index)));
    } else {
      std::vector<Instruction*> ops;
      for (const Instruction* op : i->operands()) ops.push_back(copy(op));
      made = b.add(i->opcode(), ops, i->attrs(), &i->shape());
    }
    return copied[i] = made;
  };
  Instruction* root = copy(fusion.attrs().body->outputs().at(0));
  c->add_output(root);
  return add_loop(operands, *root, value_.at(&fusion), str_cat(sym_, "k", fusion.id()));
}

bool Lowerer::add_pooling(const Instruction& inst) {
  std::optional<PoolGeometry> g = PoolGeometry::of(inst, why_);
  if (!g) return false;
  std::shared_ptr<CudnnPooling> plan;
  if (device_ != nullptr) {
    device_->make_current();
    plan = std::make_shared<CudnnPooling>(*g, device_->ordinal());
  }
  std::vector<int> operands = operand_values(inst);
  const bool padded = g->padded_explicitly();
  const Shape cudnn_x(g->dtype, g->x);
  if (padded) operands[0] = add_spatial_pad(operands[0], g->dtype, g->op_x, g->x, g->explicit_low, /*lowest=*/true);
  auto forward = [plan](CUstream s, const CUdeviceptr* in, const CUdeviceptr* out, CUdeviceptr) {
    plan->forward(s, in[0], out[0]);
  };
  if (inst.opcode() == Opcode::kReduceWindow) {
    emit({g->label(), operands, {value_.at(&inst)}, forward});
    return true;
  }
  int y = operands.at(1);  // mean: a stand-in of y's shape that cuDNN does not read
  if (g->kind == ir::ReduceKind::kMax) {
    y = exe_.add_value(Shape(g->dtype, g->y));
    emit({g->label(), {operands.at(0)}, {y}, forward});
  }
  const int dx = padded ? exe_.add_value(cudnn_x) : value_.at(&inst);
  emit({str_cat(g->label(), " backward"), {operands.at(0), y, operands.at(1)}, {dx},
                 [plan](CUstream s, const CUdeviceptr* in, const CUdeviceptr* out, CUdeviceptr) {
                   plan->backward(s, in[0], in[1], in[2], out[0]);
                 }});
  if (!padded) return true;
  Dims limits = g->op_x;
  for (size_t d = 0; d < limits.size(); ++d) limits[d] += g->explicit_low[d];
  return add_rewrite(
             dx, cudnn_x,
             [&](ir::Builder& b, Instruction* p) { return b.slice(p, g->explicit_low, limits, Dims(limits.size(), 1)); },
             value_.at(&inst), str_cat(sym_, "k", inst.id(), "_slice")) >= 0;
}

}  // namespace kiln::cuda::lowering
