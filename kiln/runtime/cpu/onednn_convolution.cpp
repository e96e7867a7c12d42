// oneDNN convolution adapter. Shape legend: x (N, H, W, C), w (KH, KW, C/G, F), y (N, OH, OW, F),
// bias (F). oneDNN's logical dims are x (N, C, H, W), w (F, C/G, KH, KW) or, grouped,
// (G, F/G, C/G, KH, KW), y (N, F, OH, OW); our layouts are given to it as strides.
#include "kiln/runtime/cpu/onednn_convolution.h"

#include <dnnl.hpp>

#include <optional>
#include <vector>

#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/core/logging.h"
#include "kiln/core/str_cat.h"
#include "kiln/ir/computation.h"
#include "kiln/ir/printer.h"
#include "kiln/runtime/cpu/onednn_util_impl.h"

namespace kiln::cpu {
namespace {

using compiler::EpilogueActivation;
using dnnl::memory;
using ir::Opcode;

// The HWIO filter (KH, KW, Cg, F) as oneDNN's (F, Cg, KH, KW) or (G, F/G, Cg, KH, KW), by strides;
// format `any` instead lets the primitive pick its preferred (blocked) layout.
memory::desc filter_desc(const Shape& w, int64_t groups, bool any, memory::data_type f32) {
  const int64_t kh = w.dims()[0], kw = w.dims()[1], cg = w.dims()[2], f = w.dims()[3];
  if (groups == 1) {
    if (any) return memory::desc({f, cg, kh, kw}, f32, memory::format_tag::any);
    return memory::desc({f, cg, kh, kw}, f32, memory::dims{1, f, kw * cg * f, cg * f});
  }
  const int64_t fg = f / groups;
  if (any) return memory::desc({groups, fg, cg, kh, kw}, f32, memory::format_tag::any);
  return memory::desc({groups, fg, cg, kh, kw}, f32, memory::dims{fg, 1, f, kw * cg * f, cg * f});
}

}  // namespace

class ConvolutionImpl {
 public:
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::primitive primitive;
  std::vector<onednn::BoundArg> inputs;  // in operand order
  std::optional<onednn::BoundArg> output;
  std::string label;
  std::string isa;  // oneDNN's implementation
};

ConvolutionKernel::ConvolutionKernel(std::unique_ptr<ConvolutionImpl> impl) : impl_(std::move(impl)) {}
ConvolutionKernel::~ConvolutionKernel() = default;
const std::string& ConvolutionKernel::label() const { return impl_->label; }

std::unique_ptr<ConvolutionKernel> ConvolutionKernel::create(const ir::Instruction& inst) {
  const ir::Instruction* conv = &inst;
  compiler::OutputFusionInfo epilogue;
  if (inst.opcode() == Opcode::kFusion) {
    if (inst.attrs().fusion_kind != ir::FusionKind::kOutput) return nullptr;
    std::optional<compiler::OutputFusionInfo> info = compiler::match_output_fusion(*inst.attrs().body);
    if (!info || info->contraction->opcode() != Opcode::kConvolution) return nullptr;
    epilogue = *info;
    conv = info->contraction;
  }
  const Opcode op = conv->opcode();
  if (op != Opcode::kConvolution && op != Opcode::kConvBackwardInput && op != Opcode::kConvBackwardFilter)
    return nullptr;
  // The forward view of the op: x, w, y, whichever of them are operands or the result.
  const Shape& a = conv->operand(0)->shape();
  const Shape& b = conv->operand(1)->shape();
  const Shape& r = conv->shape();
  const Shape& x = op == Opcode::kConvBackwardInput ? r : a;
  const Shape& w = op == Opcode::kConvolution ? b : op == Opcode::kConvBackwardInput ? b : r;
  const Shape& y = op == Opcode::kConvolution ? r : op == Opcode::kConvBackwardInput ? a : b;
  const DType t = x.dtype();
  if (t != DType::kF32 && t != DType::kBF16 && t != DType::kF16) return nullptr;
  if (inst.shape().dtype() != t) return nullptr;
  const ir::ConvDims& cd = conv->attrs().conv;
  for (size_t i = 0; i < 2; ++i)
    if (cd.padding_low[i] < 0 || cd.padding_high[i] < 0) return nullptr;  // rare; reference path
  const memory::dims strides = {cd.strides[0], cd.strides[1]};
  const memory::dims dilates = {cd.dilation[0] - 1, cd.dilation[1] - 1};  // oneDNN counts the gaps
  const memory::dims pad_l = {cd.padding_low[0], cd.padding_low[1]};
  const memory::dims pad_r = {cd.padding_high[0], cd.padding_high[1]};
  const auto direct = dnnl::algorithm::convolution_direct;
  const DType bias_t = epilogue.has_bias ? inst.operand(2)->shape().dtype() : t;

  // The primitives with every operand in `dt`: the 16-bit type itself (oneDNN's bf16/f16
  // kernels, f32 accumulation inside) or f32 (16-bit values widened around the call). Throws
  // dnnl::error when oneDNN has no implementation.
  auto build = [&](memory::data_type dt) {
    const memory::desc x_md = onednn::nhwc(x, dt), y_md = onednn::nhwc(y, dt);
    const memory::desc w_md = filter_desc(w, cd.groups, /*any=*/false, dt);
    const memory::desc w_any = filter_desc(w, cd.groups, /*any=*/true, dt);
    const memory::desc bias_md({w.dims()[3]}, dt == memory::data_type::f32 ? dt : onednn::data_type(bias_t),
                               memory::format_tag::a);
    auto impl = std::make_unique<ConvolutionImpl>();
    const dnnl::engine& eng = impl->engine;
    dnnl::primitive_attr attr;
    if (auto alg = onednn::eltwise_of(epilogue.activation)) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, *alg, 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    auto fwd_desc = epilogue.has_bias
                        ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, direct, x_md, w_any,
                                                          bias_md, y_md, strides, dilates, pad_l, pad_r)
                        : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, direct, x_md, w_any,
                                                          y_md, strides, dilates, pad_l, pad_r);
    dnnl::convolution_forward::primitive_desc fwd(fwd_desc, attr, eng);
    std::string impl_name;
    switch (op) {
      case Opcode::kConvolution:
        impl->primitive = dnnl::convolution_forward(fwd);
        impl->inputs.emplace_back(DNNL_ARG_SRC, a, x_md, fwd.src_desc(), eng, false);
        impl->inputs.emplace_back(DNNL_ARG_WEIGHTS, b, w_md, fwd.weights_desc(), eng, false);
        if (epilogue.has_bias) {
          const Shape bias_shape = inst.operand(2)->shape();
          impl->inputs.emplace_back(DNNL_ARG_BIAS, bias_shape, bias_md, fwd.bias_desc(), eng, false);
        }
        impl->output.emplace(DNNL_ARG_DST, inst.shape(), y_md, fwd.dst_desc(), eng, true);
        impl_name = fwd.impl_info_str();
        break;
      case Opcode::kConvBackwardInput: {
        dnnl::convolution_backward_data::primitive_desc pd(
            dnnl::convolution_backward_data::desc(direct, x_md, w_any, y_md, strides, dilates, pad_l, pad_r), eng,
            fwd);
        impl->primitive = dnnl::convolution_backward_data(pd);
        impl->inputs.emplace_back(DNNL_ARG_DIFF_DST, a, y_md, pd.diff_dst_desc(), eng, false);
        impl->inputs.emplace_back(DNNL_ARG_WEIGHTS, b, w_md, pd.weights_desc(), eng, false);
        impl->output.emplace(DNNL_ARG_DIFF_SRC, r, x_md, pd.diff_src_desc(), eng, true);
        impl_name = pd.impl_info_str();
        break;
      }
      case Opcode::kConvBackwardFilter: {
        dnnl::convolution_backward_weights::primitive_desc pd(
            dnnl::convolution_backward_weights::desc(direct, x_md, w_any, y_md, strides, dilates, pad_l, pad_r),
            eng, fwd);
        impl->primitive = dnnl::convolution_backward_weights(pd);
        impl->inputs.emplace_back(DNNL_ARG_SRC, a, x_md, pd.src_desc(), eng, false);
        impl->inputs.emplace_back(DNNL_ARG_DIFF_DST, b, y_md, pd.diff_dst_desc(), eng, false);
        impl->output.emplace(DNNL_ARG_DIFF_WEIGHTS, r, w_md, pd.diff_weights_desc(), eng, true);
        impl_name = pd.impl_info_str();
        break;
      }
      default: throw dnnl::error(dnnl_invalid_arguments, "not a convolution");
    }
    impl->label = std::string(ir::opcode_name(op));
    if (epilogue.has_bias) impl->label += "+bias";
    if (epilogue.activation != EpilogueActivation::kNone)
      impl->label += str_cat("+", onednn::activation_name(epilogue.activation));
    impl->label += str_cat(" (", impl_name, dt == memory::data_type::f32 && t != DType::kF32 ? ", widened" : "", ")");
    impl->isa = impl_name;
    return impl;
  };

  std::unique_ptr<ConvolutionImpl> impl;
  if (t != DType::kF32) {
    try {
      impl = build(onednn::data_type(t));
      if (onednn::is_reference_impl(impl->isa)) impl.reset();
    } catch (const dnnl::error& e) {
      log(LogLevel::kDebug, str_cat("cpu: oneDNN has no ", name(t), " kernel for ", ir::describe(inst), ": ", e.what(),
                                    "; f32 from ", name(t), " storage"));
    }
  }
  try {
    if (impl == nullptr) impl = build(memory::data_type::f32);
  } catch (const dnnl::error& e) {
    log(LogLevel::kDebug, str_cat("cpu: oneDNN rejects ", ir::describe(inst), ": ", e.what(), "; reference kernel"));
    return nullptr;
  }
  return std::unique_ptr<ConvolutionKernel>(new ConvolutionKernel(std::move(impl)));
}

void ConvolutionKernel::run(const void* const* in, void* out) const {
  ConvolutionImpl& c = *impl_;
  HostTensor keep[3], wide;
  std::unordered_map<int, memory> args;
  for (size_t i = 0; i < c.inputs.size(); ++i) onednn::bind_input(c.inputs[i], in[i], c.stream, &keep[i], args);
  onednn::bind_output(*c.output, out, &wide, args);
  c.primitive.execute(c.stream, args);
  onednn::finish_output(*c.output, out, wide, c.stream);
}

}  // namespace kiln::cpu
