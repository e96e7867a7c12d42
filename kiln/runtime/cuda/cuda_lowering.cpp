#include "kiln/runtime/cuda/cuda_lowering_impl.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "kiln/compiler/codegen/kernel_cache.h"
#include "kiln/compiler/codegen/llvm_codegen.h"
#include "kiln/compiler/codegen/loop_ir.h"
#include "kiln/compiler/default_pipeline.h"
#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/core/check.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/clone.h"
#include "kiln/ir/shape_inference.h"
#include "kiln/runtime/cuda/cublaslt_matmul_impl.h"
#include "kiln/runtime/cuda/cuda_backend.h"
#include "kiln/runtime/cuda/cuda_driver_impl.h"
#include "kiln/runtime/cuda/cudnn_ops_impl.h"
#include "kiln/runtime/cuda/nccl_collectives_impl.h"
#include "kiln/runtime/cuda/reduction_plan.h"

namespace kiln::cuda {
namespace {

using ir::Instruction;
using ir::Opcode;

constexpr unsigned kBlock = 256;
constexpr size_t kMaxKernelPointers = 32;  // a stage's loads and its output

// A generated kernel, found in the program's PTX module once it is loaded.
struct KernelRef {
  std::string symbol;
  CUfunction function = nullptr;
};

// `threads` threads of `kernel` in blocks of kBlock, on `stream`.
void launch(const KernelRef& kernel, int64_t threads, void** params, CUstream stream) {
  const unsigned grid = static_cast<unsigned>((threads + kBlock - 1) / kBlock);
  check(driver().cuLaunchKernel(kernel.function, grid, 1, 1, kBlock, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel");
}

class Lowerer {
 public:
  /// `device` null: a dry run (no GPU touched) that only decides the steps and generates the
  /// PTX, for a compute capability of `compute_capability`.
  Lowerer(CudaExecutable& exe, CudaDevice* device, int compute_capability, const runtime::CompileOptions& options)
      : exe_(exe), device_(device), compute_capability_(compute_capability), options_(options),
        label_(options.label.empty() ? exe.lowered_module()->name() : options.label),
        target_("cuda", device != nullptr ? device->memory_bytes() : std::numeric_limits<int64_t>::max(), 256),
        scratch_(std::make_shared<ir::Module>("cuda_scratch")) {}

  const std::string& ptx() const { return ptx_; }

  void lower_all() {
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

 private:
  static std::string op_key(const Instruction& inst) {
    if (inst.opcode() != Opcode::kFusion) return std::string(ir::opcode_name(inst.opcode()));
    return str_cat("fusion(", ir::fusion_kind_name(inst.attrs().fusion_kind), ")");
  }

  // A literal uploaded once, now (a dry run only numbers it).
  int add_constant(const HostTensor& literal) {
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

  void emit(CudaStep step) {
    if (sink_ != nullptr) sink_->push_back(std::move(step));
    else exe_.add_step(std::move(step));
  }

  // `c`'s instructions as steps of the current list; its parameters are the program's
  // arguments (`bound` null: the entry) or the values `bound` names (a nested computation).
  void lower_computation(const ir::Computation& c, const std::vector<int>* bound) {
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

  std::vector<int> operand_values(const Instruction& inst) const {
    std::vector<int> v;
    for (const Instruction* op : inst.operands()) v.push_back(value_.at(op));
    return v;
  }

  bool lower_one(const Instruction& inst) {
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

  // A computation holding just `inst` over fresh parameters, so single ops and fusions share
  // the loop path.
  const ir::Computation* wrap(const Instruction& inst) {
    ir::Computation* c = scratch_->add_computation(str_cat(sym_, "op", inst.id()));
    ir::Builder b(c);
    std::vector<Instruction*> params;
    for (const Instruction* op : inst.operands()) params.push_back(b.parameter(op->shape(), ""));
    c->add_output(b.add(inst.opcode(), params, inst.attrs(), &inst.shape()));
    return c;
  }

  // A step's run that copies `bytes` of its read into its write.
  static auto copy_run(size_t bytes) {
    return [bytes](CUstream s, const CUdeviceptr* in, const CUdeviceptr* out, CUdeviceptr) {
      if (bytes > 0) check(driver().cuMemcpyDtoDAsync(out[0], in[0], bytes, s), "cuMemcpyDtoDAsync");
    };
  }

  bool add_copy(const Instruction& inst, const char* label) {
    emit({label, operand_values(inst), {value_.at(&inst)}, copy_run(static_cast<size_t>(inst.shape().byte_size()))});
    return true;
  }

  // The operand copied into the result, then reduced there in place with the other replicas
  // by NCCL, on the compute stream. Several replicas need the NCCL collectives of GPU
  // replicas (make_nccl_collectives); host collectives cannot reach device memory.
  bool add_nccl_all_reduce(const Instruction& inst) {
    auto* nccl = dynamic_cast<NcclCollectives*>(options_.collectives.get());
    const int replicas = options_.collectives->num_replicas();
    if (nccl == nullptr) {
      why_ = str_cat(replicas, " replicas over host collectives: GPU replicas reduce with NCCL (make_nccl_collectives)");
      return false;
    }
    const int replica = options_.replica_id;
    const DType dtype = inst.dtype();
    const ir::ReduceKind kind = inst.attrs().reduce_kind;
    if (!NcclCollectives::supports(kind, dtype)) {
      why_ = str_cat("NCCL has no ", ir::reduce_kind_name(kind), " of ", name(dtype));
      return false;
    }
    if (device_ != nullptr && nccl->ordinal(replica) != device_->ordinal()) {
      why_ = str_cat("replica ", replica, " is on cuda:", nccl->ordinal(replica), ", not ", device_->name());
      return false;
    }
    if (!add_copy(inst, "copy(all_reduce operand)")) return false;
    const int64_t count = inst.shape().num_elements();
    std::shared_ptr<runtime::Collectives> keep = options_.collectives;
    emit({str_cat("all_reduce(nccl, ", replicas, " replicas, ", ir::reduce_kind_name(kind), ", ", count, " ", name(dtype), ")"),
                   {value_.at(&inst)}, {value_.at(&inst)},
                   [nccl, keep, replica, count, dtype, kind](CUstream s, const CUdeviceptr*, const CUdeviceptr* out, CUdeviceptr) {
                     if (count > 0) nccl->all_reduce_on_device(replica, s, out[0], count, dtype, kind);
                   }});
    exe_.add_finish_check([nccl, keep] { nccl->throw_if_aborted(); });
    return true;
  }

  // A matmul on cuBLASLt: `dot` itself, or the contraction of the output fusion `inst`, whose
  // bias and relu epilogues cuBLASLt applies (not over a batch: the bias would need a batch
  // stride). An epilogue it has no form for (tanh, logistic, exp, ..., a dtype change) runs
  // after the plain matmul as one loop kernel. An empty sum (k = 0) is zeros, by a memset.
  bool add_matmul(const Instruction& inst, const Instruction& dot, bool bias, compiler::EpilogueActivation act) {
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

  // The value operand `i` of `contraction` reads: `inst`'s own operand, or (`inst` an output
  // fusion) the fusion operand its body parameter stands for.
  int contraction_operand(const Instruction& inst, const Instruction& contraction, size_t i) const {
    if (&inst == &contraction) return value_.at(inst.operand(i));
    return operand_values(inst).at(static_cast<size_t>(contraction.operand(i)->attrs().parameter_index));
  }

  // A convolution op through cuDNN (`conv` is `inst`, or the contraction of the output fusion
  // `inst`). cuDNN's NHWC filters are KRSC, Kiln's HWIO: a filter operand is transposed before
  // the call and a filter gradient after it, by loop kernels. Padding cuDNN cannot express
  // (more on one side) is a padded copy of x before the call (add_spatial_pad) and, for a data
  // gradient, a slice loop kernel after it (see ConvGeometry). A fusion's epilogue (bias, activation) runs after it as one
  // loop kernel.
  bool add_convolution(const Instruction& inst, const Instruction& conv) {
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

  // `source` (of `shape`) transposed by `permutation` into `dest` (a new value when -1), by a
  // loop kernel; the value id, or -1 when the code generator cannot build the loop.
  int add_transpose(int source, const Shape& shape, const Dims& permutation, int dest, const std::string& prefix) {
    return add_rewrite(source, shape, [&](ir::Builder& b, Instruction* p) { return b.transpose(p, permutation); }, dest,
                       prefix);
  }

  // `source` (NHWC, dims `from`) into a new value of dims `to`, shifted by low[1] rows and
  // low[2] columns, the rest 0 or (`lowest`) -inf: a memset and one 3D copy (N planes of H
  // rows) on the compute stream. These two calls move each byte once more than the generated
  // pad kernel (add_index_op) would, at copy bandwidth; not switched to it yet.
  int add_spatial_pad(int source, DType t, const Dims& from, const Dims& to, const Dims& low, bool lowest) {
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

  // make(builder, p) over `source` (of `shape`, as parameter p) into `dest` (a new value when
  // -1), by a loop kernel; the value id, or -1 when the code generator cannot build the loop.
  int add_rewrite(int source, const Shape& shape, const std::function<Instruction*(ir::Builder&, Instruction*)>& make,
                  int dest, const std::string& prefix) {
    ir::Computation* c = scratch_->add_computation(prefix);
    ir::Builder b(c);
    Instruction* t = make(b, b.parameter(shape, ""));
    c->add_output(t);
    if (dest < 0) dest = exe_.add_value(t->shape());
    return add_loop({source}, *t, dest, prefix) ? dest : -1;
  }

  // The output fusion's body with its contraction replaced by a parameter reading
  // `contraction_value`, as loop kernels into the fusion's value.
  bool add_epilogue(const Instruction& fusion, const Instruction& contraction, int contraction_value) {
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

  // reduce_window(x) -> y and reduce_window_grad(x, dy) -> dx through cuDNN's pooling. The max
  // gradient needs the forward's y too (cuDNN finds each window's maximum by comparing x with
  // it), so it runs the forward into a scratch value first; the mean gradient reads neither.
  bool add_pooling(const Instruction& inst) {
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

  // `reduce` (the instruction itself, or the root of a reduction fusion's body): its producer
  // as a loop into a scratch value (unless it is an operand as it is), then a reduction kernel
  // over the input viewed as [outer, r, inner], its layout chosen by ReductionPlan. Axes that
  // are not consecutive (reduce_sum(x, {0, 2})) are made so by a transpose loop kernel first,
  // which moves the reduced axes last: [kept..., reduced...], so inner is 1.
  bool add_reduction(const Instruction& inst, const Instruction& reduce) {
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

  // The CPU's Philox stream (kiln/core/rng.h): element i of the result is the same 32 bits on
  // every backend, so dropout masks match.
  bool add_rng_bits(const Instruction& inst) {
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

  // pad, concatenate, gather and dynamic_slice: one generated kernel (IndexKernelUnit), a
  // thread per result element. scatter_add and dynamic_update_slice copy x into the result,
  // then a thread per update element stores (scatter_add: adds atomically) into it; 8- and
  // 16-bit scatter_adds accumulate in a 32-bit copy (codegen::scatter_accumulator) that loop
  // kernels widen and narrow. Kernels read dynamic starts on the GPU, so the host never waits.
  bool add_index_op(const Instruction& inst) {
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

  // `unit` (computing `inst`) over the values `reads` (its pointers but the last) into `dest`.
  void add_index_kernel(const Instruction& inst, const codegen::IndexKernelUnit& unit, const std::vector<int>& reads,
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

  // A nested computation (a while's condition or body, a branch) lowered as the CPU compiles
  // it: a program of its own through the pass pipeline, then lowered here into `list`, with
  // its parameters bound to `params` and its kernels in the program's PTX module (symbols
  // prefixed "n<k>_", so they stay unique). Its output values are `outs`; values created from
  // `owned_from` on are its own.
  struct Nested {
    std::vector<int> outs;
    int owned_from = 0;
  };
  Nested lower_nested(const ir::Computation& c, const std::vector<int>& params, std::vector<CudaStep>& list) {
    return lower_nested(*optimized(c), params, list);
  }
  std::shared_ptr<ir::Module> optimized(const ir::Computation& c) {
    std::shared_ptr<ir::Module> m = ir::extract_module(c, str_cat(label_, ".", c.name()));
    compiler::check_and_optimize(*m, target_, options_.debug, m->name());
    exe_.hold(m);
    return m;
  }
  Nested lower_nested(const ir::Module& m, const std::vector<int>& params, std::vector<CudaStep>& list) {
    const std::string outer_sym = sym_;
    std::vector<CudaStep>* outer_sink = sink_;
    sym_ = str_cat("n", nested_programs_++, "_");
    sink_ = &list;
    Nested n{{}, exe_.value_count()};
    lower_computation(*m.entry(), &params);
    for (const Instruction* o : m.entry()->outputs()) n.outs.push_back(value_.at(o));
    sym_ = outer_sym;
    sink_ = outer_sink;
    return n;
  }

  // Whether `n`'s output k may trade buffers with a value outside it instead of being copied:
  // a value its own steps compute (no parameter, literal or outer value) that no other output is.
  bool swappable(const Nested& n, size_t k) const {
    const int v = n.outs[k];
    return v >= n.owned_from && !constants_.count(v) && std::count(n.outs.begin(), n.outs.end(), v) == 1;
  }

  // Value `from` copied into a new value at the end of `list`; the new value's id.
  int add_copy_step(int from, std::vector<CudaStep>& list) {
    const Shape shape = exe_.value_shape(from);
    const int to = exe_.add_value(shape);
    list.push_back({"copy(control flow result)", {from}, {to}, copy_run(static_cast<size_t>(shape.byte_size()))});
    return to;
  }

  // 8 bytes of page-locked host memory a predicate or selector is read into (null in a dry run).
  std::shared_ptr<void> pinned_scalar() {
    if (device_ == nullptr) return nullptr;
    device_->make_current();
    void* p = nullptr;
    check(driver().cuMemHostAlloc(&p, 8, 0), "cuMemHostAlloc (predicate)");
    return std::shared_ptr<void>(p, [](void* q) { driver().cuMemFreeHost(q); });
  }

  // while: a carried value the body changes (variant) has a value of its own, copied from the
  // operand once per run and then traded, buffer for buffer, with the body's new value after
  // each iteration (ping-pong: nothing is copied). A value the body passes through (a scan's
  // xs, captured weights) stays the operand's value for the whole loop.
  // With trip_count >= 0 (the tracer knows it: scans) the body runs that many times and the
  // condition is never evaluated: the GPU trusts the tracer's trip_count, where the CPU
  // evaluates the condition anyway and checks the count (a bug check). Otherwise the
  // condition runs on the GPU and its predicate is read to the host per iteration.
  void add_while(const Instruction& loop) {
    const ir::Attrs& a = loop.attrs();
    const std::vector<int> operands = operand_values(loop);
    const std::shared_ptr<ir::Module> body = optimized(*a.body);
    std::vector<int> carried = operands;
    std::vector<size_t> variant;
    const ir::Computation& entry = *body->entry();
    for (size_t i = 0; i < carried.size(); ++i) {
      if (entry.outputs()[i] == entry.parameter(i)) continue;
      variant.push_back(i);
      carried[i] = exe_.add_value(exe_.value_shape(operands[i]));
      // A scan's stacked outputs: a dynamic_update_slice of the carried value, its only reader,
      // writes just the update into the carried buffer (the CPU's in_place_loop_outputs).
      const Instruction* out = entry.outputs()[i];
      const Instruction* p = entry.parameter(i);
      if (out->opcode() == Opcode::kDynamicUpdateSlice && out->operand(0) == p && p->users().size() == 1 &&
          std::count(entry.outputs().begin(), entry.outputs().end(), out) == 1 &&
          std::count(entry.outputs().begin(), entry.outputs().end(), p) == 0)
        in_place_[out] = carried[i];
    }
    std::vector<NestedSteps> nested;
    int pred = -1;
    if (a.trip_count < 0) {
      nested.push_back({"condition", {}});
      pred = lower_nested(*a.condition, carried, nested.back().steps).outs.at(0);
    }
    nested.push_back({str_cat("body", a.trip_count >= 0 ? str_cat(" (x", a.trip_count, ")") : ""), {}});
    std::vector<CudaStep>& body_steps = nested.back().steps;
    const Nested b = lower_nested(*body, carried, body_steps);
    std::vector<std::pair<int, int>> copy_in, trade;  // (operand, carried), (carried, body result)
    std::vector<int> writes;
    bool changes = false;
    for (size_t i : variant) {
      copy_in.push_back({operands[i], carried[i]});
      writes.push_back(carried[i]);
      const bool in_place = in_place_.count(entry.outputs()[i]) > 0;
      changes |= in_place;
      if (b.outs[i] == carried[i]) continue;  // in place, or the body's value is the carried one after all
      changes = true;
      trade.push_back({carried[i], swappable(b, i) ? b.outs[i] : add_copy_step(b.outs[i], body_steps)});
    }
    tuple_values_[&loop] = carried;
    const std::string where = str_cat("while %", loop.id(), loop.source().empty() ? "" : " (" + loop.source() + ")");
    CudaStep step{str_cat("while (", a.trip_count >= 0 ? str_cat("trip_count ", a.trip_count, ", no condition")
                                                       : std::string("predicate read to the host per iteration"),
                          "; ", variant.size(), " carried, ", operands.size() - variant.size(), " invariant)"),
                  operands, writes, nullptr, std::move(nested), nullptr};
    const int64_t trips = a.trip_count;
    std::shared_ptr<void> host = pinned_scalar();
    step.control = [copy_in, trade, changes, trips, pred, host, where](CudaRun& run, const std::vector<NestedSteps>& lists) {
      for (const auto& [from, to] : copy_in) run.copy(from, to);
      const auto never_ends = [&] {
        KILN_THROW(ValueError, "[", where, "] the loop body changes no value and the condition holds: the loop "
                   "would never end. Hint: update the values the condition reads in the body.");
      };
      const auto iterate = [&] {
        if (!changes) never_ends();
        run.run(lists.back().steps);
        for (const auto& [x, y] : trade) run.swap(x, y);
      };
      if (trips >= 0) {
        for (int64_t i = 0; i < trips; ++i) iterate();
        return;
      }
      while (true) {
        run.run(lists.front().steps);
        run.read_to_host(pred, host.get(), 1);
        if (!*static_cast<const bool*>(host.get())) break;
        iterate();
      }
    };
    emit(std::move(step));
  }

  // conditional: the selector is read to the host (i32 out of range picks the last branch; a
  // bool picks branch 0 when true, as the reference evaluator), then the branch's steps run
  // over the operands' values (a branch only reads them) and its results become the
  // conditional's: by trading buffers where the branch computed them, else by a copy.
  void add_conditional(const Instruction& cond) {
    const std::vector<int> operands = operand_values(cond);
    const std::vector<int> args(operands.begin() + 1, operands.end());
    std::vector<int> results;
    for (const Shape& shape : ir::tuple_result_shapes(cond)) results.push_back(exe_.add_value(shape));
    std::vector<NestedSteps> nested;
    std::vector<std::vector<std::pair<int, int>>> trade(cond.attrs().branches.size());
    for (size_t k = 0; k < trade.size(); ++k) {
      nested.push_back({str_cat("branch ", k), {}});
      const Nested n = lower_nested(*cond.attrs().branches[k], args, nested.back().steps);
      for (size_t r = 0; r < results.size(); ++r)
        trade[k].push_back({results[r], swappable(n, r) ? n.outs[r] : add_copy_step(n.outs[r], nested.back().steps)});
    }
    tuple_values_[&cond] = results;
    const bool boolean = cond.operand(0)->dtype() == DType::kBool;
    CudaStep step{str_cat("conditional (", trade.size(), " branches, selector read to the host)"), operands, results,
                  nullptr, std::move(nested), nullptr};
    std::shared_ptr<void> host = pinned_scalar();
    const int selector = operands[0];
    step.control = [trade, boolean, selector, host](CudaRun& run, const std::vector<NestedSteps>& branches) {
      run.read_to_host(selector, host.get(), boolean ? 1 : 4);
      size_t pick = 0;
      if (boolean) {
        pick = *static_cast<const bool*>(host.get()) ? 0 : 1;
      } else {
        int32_t i = 0;
        std::memcpy(&i, host.get(), sizeof i);
        pick = i < 0 || static_cast<size_t>(i) >= branches.size() ? branches.size() - 1 : static_cast<size_t>(i);
      }
      run.run(branches[pick].steps);
      for (const auto& [result, value] : trade[pick]) run.swap(result, value);
    };
    emit(std::move(step));
  }

  // One step per stage of the loop's LoopIr: inner stages write scratch values that later
  // stages load; literals are uploaded once, here.
  bool add_loop(const Instruction& inst, const Instruction& root) {
    return add_loop(operand_values(inst), root, value_.at(&inst), str_cat(sym_, "k", inst.id()));
  }

  // `root`'s value (its leaves are parameters standing for `operands`) into value `dest`.
  bool add_loop(const std::vector<int>& operands, const Instruction& root, int dest, const std::string& prefix) {
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

  // Generates (or reads from the kernel cache) one PTX module for every loop of the program
  // and finds each kernel in it.
  void load_kernels() {
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

  CudaExecutable& exe_;
  CudaDevice* device_;
  int compute_capability_;
  const runtime::CompileOptions& options_;
  std::string label_;
  compiler::AcceptAllTarget target_;  // the backend's, for the nested programs' passes
  std::shared_ptr<ir::Module> scratch_;
  std::unordered_map<const Instruction*, int> value_;
  std::deque<codegen::LoopIr> irs_;  // stable addresses for units_
  std::vector<codegen::LoopUnit> units_;
  std::vector<codegen::GpuKernelUnit> gpu_kernels_;
  std::vector<codegen::IndexKernelUnit> index_kernels_;
  std::vector<std::shared_ptr<KernelRef>> kernels_;
  std::string ptx_;
  std::string why_;  // set by lower_one when it cannot lower an op it knows, for the CompileError
  std::map<std::string, int> missing_;  // op (and why) -> count, nested programs' included
  std::vector<CudaStep>* sink_ = nullptr;  // where steps go: a nested list, or (null) the program
  std::string sym_;  // kernel symbol prefix: "" in the entry, "n<k>_" in nested program k
  int nested_programs_ = 0;
  std::unordered_set<int> constants_;  // value ids of uploaded literals
  std::unordered_map<const Instruction*, std::vector<int>> tuple_values_;  // a while's or conditional's results
  std::unordered_map<const Instruction*, int> in_place_;  // a body's dynamic_update_slice -> its carried value
};

}  // namespace

void lower(CudaExecutable& exe, CudaDevice& device, const runtime::CompileOptions& options) {
  Lowerer(exe, &device, device.compute_capability(), options).lower_all();
}

GpuLowering lower_without_gpu(const ir::Module& optimized, int compute_capability, const runtime::CompileOptions& options) {
  CudaExecutable exe(ir::extract_module(*optimized.entry(), optimized.name()), nullptr);
  Lowerer lowerer(exe, nullptr, compute_capability, options);
  lowerer.lower_all();
  return {lowerer.ptx(), exe.describe(), exe.planned_peak_bytes()};
}

std::string lower_to_ptx(const ir::Module& optimized, int compute_capability, const runtime::CompileOptions& options) {
  return lower_without_gpu(optimized, compute_capability, options).ptx;
}

}  // namespace kiln::cuda
