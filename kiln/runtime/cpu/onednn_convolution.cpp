// oneDNN convolution adapter. Shape legend: x (N, H, W, C), w (KH, KW, C/G, F), y (N, OH, OW, F),
// bias (F). oneDNN's logical dims are x (N, C, H, W), w (F, C/G, KH, KW) or, grouped,
// (G, F/G, C/G, KH, KW), y (N, F, OH, OW); our layouts are given to it as strides.
#include "kiln/runtime/cpu/onednn_convolution.h"

#include <dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/core/logging.h"
#include "kiln/core/str_cat.h"
#include "kiln/ir/computation.h"
#include "kiln/ir/printer.h"
#include "kiln/runtime/cpu/contraction_decisions.h"
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
  onednn::TeamPrimitive primitive;
  std::vector<onednn::BoundArg> inputs;  // in operand order
  std::optional<onednn::BoundArg> output;
  std::string label;
  std::string isa;  // oneDNN's implementation
  // Widened 16-bit path: the primitives run on `batch` images at a time out of `total_batch`
  // (`rest` on the last, smaller tile); a filter gradient (`accumulate`) is summed over tiles
  // in f32.
  int64_t batch = 0, total_batch = 0;
  bool accumulate = false;
  DType out_dtype = DType::kF32;  // the result's (a summed filter gradient is rounded to it)
  std::unique_ptr<ConvolutionImpl> rest;
  std::vector<float> sum, part;  // a tiled filter gradient: the sum so far and one tile's
  std::shared_ptr<WidenScratch> scratch;  // the widened path's f32 copies (null on the others)

  // One run over operands `in` (tiles of the batch where batched) into `out`. `unbatched`:
  // also bind the operands that are the same for every tile (the filter, the bias), which keep
  // their widened and reordered copies from the first tile of a run to the others.
  void run_once(const void* const* in, void* out, bool unbatched = true) {
    std::unordered_map<int, memory> args;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (unbatched || is_batched(inputs[i])) onednn::bind_input(inputs[i], in[i], stream, args);
      else args.insert({inputs[i].arg, inputs[i].inner});
    }
    onednn::bind_output(*output, out, args);
    primitive.for_team().execute(stream, args);
    onednn::finish_output(*output, out, stream);
  }

  static bool is_batched(const onednn::BoundArg& a) {
    return a.shape.rank() == 4 && a.arg != DNNL_ARG_WEIGHTS && a.arg != DNNL_ARG_BIAS;
  }

  // The args with f32 copies of 16-bit values (none on the f32 and native paths).
  std::vector<onednn::BoundArg*> widened_args() {
    std::vector<onednn::BoundArg*> args;
    for (onednn::BoundArg& a : inputs) args.push_back(&a);
    args.push_back(&*output);
    return args;
  }
  // Scratch floats for a run: this primitive's copies, or the rest tile's (it runs after).
  int64_t scratch_floats() {
    return std::max(onednn::widened_floats(widened_args()), rest != nullptr ? rest->scratch_floats() : 0);
  }

  // The whole batch at once, or (widened path) a tile of it at a time.
  void run(const void* const* in, void* out) {
    ConvolutionImpl& c = *this;
    std::optional<WidenScratch::Lease> lease;
    if (c.scratch != nullptr) {
      lease.emplace(*c.scratch, c.scratch_floats());
      onednn::point_into(c.widened_args(), lease->data());
      if (c.rest != nullptr) onednn::point_into(c.rest->widened_args(), lease->data());
    }
    if (c.total_batch == 0 || c.batch == c.total_batch) return c.run_once(in, out);
    // Batch tiles: operands and result advance by their bytes per image; a filter gradient is
    // summed in f32 over the tiles, then rounded once.
    const Shape& result = c.output->shape;
    if (c.accumulate) std::fill(c.sum.begin(), c.sum.end(), 0.0f);
    for (int64_t n0 = 0; n0 < c.total_batch; n0 += c.batch) {
      ConvolutionImpl& t = c.total_batch - n0 >= c.batch ? c : *c.rest;
      const bool first = n0 == 0 || &t != &c;  // t's first tile of this run
      const void* tile_in[3] = {};
      for (size_t i = 0; i < t.inputs.size(); ++i) {
        const Shape& s = t.inputs[i].shape;
        tile_in[i] = static_cast<const char*>(in[i]) + (is_batched(t.inputs[i]) ? n0 * (s.byte_size() / s.dims()[0]) : 0);
      }
      if (!c.accumulate) {
        t.run_once(tile_in, static_cast<char*>(out) + n0 * (result.byte_size() / result.dims()[0]), first);
        continue;
      }
      t.run_once(tile_in, c.part.data(), first);
      for (size_t k = 0; k < c.sum.size(); ++k) c.sum[k] += c.part[k];
    }
    if (c.accumulate) cpu::narrow(c.sum.data(), static_cast<int64_t>(c.sum.size()), c.out_dtype, out);
  }
};

ConvolutionKernel::ConvolutionKernel(std::unique_ptr<ConvolutionImpl> impl) : impl_(std::move(impl)) {}
ConvolutionKernel::~ConvolutionKernel() = default;
const std::string& ConvolutionKernel::label() const { return impl_->label; }

bool ConvolutionKernel::takes_padding(const ir::Instruction& conv) {
  const ir::ConvDims& cd = conv.attrs().conv;
  for (size_t i = 0; i < cd.padding_low.size(); ++i)
    if (cd.padding_low[i] < 0 || cd.padding_high[i] < 0) return false;
  return true;
}

std::unique_ptr<ConvolutionKernel> ConvolutionKernel::create(const ir::Instruction& inst, const MatmulOptions& options,
                                                             std::shared_ptr<WidenScratch> scratch) {
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
  if (!takes_padding(*conv)) return nullptr;
  const ir::ConvDims& cd = conv->attrs().conv;
  const memory::dims strides = {cd.strides[0], cd.strides[1]};
  const memory::dims dilates = {cd.dilation[0] - 1, cd.dilation[1] - 1};  // oneDNN counts the gaps
  const memory::dims pad_l = {cd.padding_low[0], cd.padding_low[1]};
  const memory::dims pad_r = {cd.padding_high[0], cd.padding_high[1]};
  const auto direct = dnnl::algorithm::convolution_direct;
  const DType bias_t = epilogue.has_bias ? inst.operand(2)->shape().dtype() : t;

  // The primitives with every operand in `dt`: the 16-bit type itself (oneDNN's bf16/f16
  // kernels, f32 accumulation inside) or f32 (16-bit values widened around the call). Throws
  // dnnl::error when oneDNN has no implementation.
  // `n`: the batch the primitives run on (a tile of the batch on the widened path).
  const int64_t batch = x.dims()[0];
  auto with_batch = [](const Shape& s, int64_t n) {
    Dims d = s.dims();
    d[0] = n;
    return s.with_dims(d);
  };
  auto build = [&](memory::data_type dt, int64_t n) {
    const Shape xn = with_batch(x, n), yn = with_batch(y, n);
    const Shape an = op == Opcode::kConvolution || op == Opcode::kConvBackwardFilter ? xn : yn;  // operand 0
    const Shape bn = op == Opcode::kConvBackwardFilter ? yn : b;                                   // operand 1
    // The result: y or dx per tile; dw whole, computed in f32 per tile and summed (run()).
    const bool accumulate = op == Opcode::kConvBackwardFilter && n != batch;
    const Shape rn = op == Opcode::kConvolution ? yn : op == Opcode::kConvBackwardInput ? xn
                     : accumulate ? r.with_dtype(DType::kF32) : r;
    const memory::desc x_md = onednn::nhwc(xn, dt), y_md = onednn::nhwc(yn, dt);
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
        impl->primitive = onednn::TeamPrimitive::of(fwd);
        impl->inputs.emplace_back(DNNL_ARG_SRC, an, x_md, fwd.src_desc(), eng, false);
        impl->inputs.emplace_back(DNNL_ARG_WEIGHTS, bn, w_md, fwd.weights_desc(), eng, false);
        if (epilogue.has_bias) {
          const Shape bias_shape = inst.operand(2)->shape();
          impl->inputs.emplace_back(DNNL_ARG_BIAS, bias_shape, bias_md, fwd.bias_desc(), eng, false);
        }
        impl->output.emplace(DNNL_ARG_DST, with_batch(inst.shape(), n), y_md, fwd.dst_desc(), eng, true);
        impl_name = fwd.impl_info_str();
        break;
      case Opcode::kConvBackwardInput: {
        dnnl::convolution_backward_data::primitive_desc pd(
            dnnl::convolution_backward_data::desc(direct, x_md, w_any, y_md, strides, dilates, pad_l, pad_r), eng,
            fwd);
        impl->primitive = onednn::TeamPrimitive::of(pd, fwd);
        impl->inputs.emplace_back(DNNL_ARG_DIFF_DST, an, y_md, pd.diff_dst_desc(), eng, false);
        impl->inputs.emplace_back(DNNL_ARG_WEIGHTS, bn, w_md, pd.weights_desc(), eng, false);
        impl->output.emplace(DNNL_ARG_DIFF_SRC, rn, x_md, pd.diff_src_desc(), eng, true);
        impl_name = pd.impl_info_str();
        break;
      }
      case Opcode::kConvBackwardFilter: {
        dnnl::convolution_backward_weights::primitive_desc pd(
            dnnl::convolution_backward_weights::desc(direct, x_md, w_any, y_md, strides, dilates, pad_l, pad_r),
            eng, fwd);
        impl->primitive = onednn::TeamPrimitive::of(pd, fwd);
        impl->inputs.emplace_back(DNNL_ARG_SRC, an, x_md, pd.src_desc(), eng, false);
        impl->inputs.emplace_back(DNNL_ARG_DIFF_DST, bn, y_md, pd.diff_dst_desc(), eng, false);
        impl->output.emplace(DNNL_ARG_DIFF_WEIGHTS, rn, w_md, pd.diff_weights_desc(), eng, true);
        impl_name = pd.impl_info_str();
        break;
      }
#define KILN_SKIP_Contraction
#include "kiln/ir/opcode_cases.inc"
      case Opcode::kDotGeneral:
        throw dnnl::error(dnnl_invalid_arguments, "not a convolution");
    }
    impl->label = std::string(ir::opcode_name(op));
    if (epilogue.has_bias) impl->label += "+bias";
    if (epilogue.activation != EpilogueActivation::kNone)
      impl->label += str_cat("+", onednn::activation_name(epilogue.activation));
    impl->label += str_cat(" (", impl_name, dt == memory::data_type::f32 && t != DType::kF32 ? ", widened" : "", ")");
    impl->isa = impl_name;
    impl->batch = n;
    impl->accumulate = accumulate;
    impl->out_dtype = inst.shape().dtype();
    return impl;
  };

  // f32 compute from 16-bit storage, a tile of the batch at a time: the f32 copies are
  // bounded by onednn::kWidenedTileBytes, never a whole activation.
  auto build_widened = [&]() {
    const int64_t tile =
        onednn::widened_batch_tile(batch, std::max(x.num_elements(), y.num_elements()) / std::max<int64_t>(batch, 1));
    std::unique_ptr<ConvolutionImpl> wide = build(memory::data_type::f32, tile);
    if (tile > 0 && batch % tile != 0) wide->rest = build(memory::data_type::f32, batch % tile);
    wide->total_batch = batch;
    if (wide->accumulate) {
      wide->sum.resize(static_cast<size_t>(r.num_elements()));
      wide->part.resize(wide->sum.size());
    }
    wide->scratch = scratch != nullptr ? scratch : std::make_shared<WidenScratch>();
    wide->scratch->reserve(wide->scratch_floats());
    if (tile != batch) wide->label += str_cat(" x", (batch + tile - 1) / tile, " batch tiles");
    return wide;
  };
  // Milliseconds of `k` on scratch operands of small normal values (min_ms).
  auto time_ms = [&](ConvolutionImpl& k) {
    const uint16_t v = t == DType::kBF16 ? 0x3e80 : 0x3400;  // 0.25
    std::vector<std::vector<uint16_t>> operands;
    std::vector<const void*> in;
    for (size_t i = 0; i < k.inputs.size(); ++i) {
      operands.emplace_back(static_cast<size_t>(inst.operand(i)->shape().num_elements()), v);
      in.push_back(operands.back().data());
    }
    std::vector<uint16_t> out(static_cast<size_t>(inst.shape().num_elements()));
    return min_ms([&] { k.run(in.data(), out.data()); });
  };

  std::unique_ptr<ConvolutionImpl> impl;
  if (t != DType::kF32 && options.choice != MatmulOptions::Choice::kF32) {
    try {
      impl = build(onednn::data_type(t), batch);
      if (onednn::is_reference_impl(impl->isa)) impl.reset();
    } catch (const dnnl::error& e) {
      log(LogLevel::kDebug, str_cat("cpu: oneDNN has no ", name(t), " kernel for ", ir::describe(inst), ": ", e.what(),
                                    "; f32 from ", name(t), " storage"));
    }
  }
  try {
    if (t == DType::kF32) {
      impl = build(memory::data_type::f32, batch);
    } else if (impl == nullptr) {
      impl = build_widened();
      report_16bit_path(t, "convolution", options.choice, "", impl->isa);
    } else if (options.choice == MatmulOptions::Choice::kNative) {
      report_16bit_path(t, "convolution", options.choice, impl->isa, "");
    } else {
      // Both run here: the faster on this shape, timed once (ContractionDecisions keeps it).
      std::unique_ptr<ConvolutionImpl> wide = build_widened();
      const std::string key = str_cat(a, " ", b, " -> ", r, " strides ", cd.strides[0], ",",
                                      cd.strides[1], " pad ", cd.padding_low[0], ",", cd.padding_low[1], ",",
                                      cd.padding_high[0], ",", cd.padding_high[1], " dilation ", cd.dilation[0], ",",
                                      cd.dilation[1], " groups ", cd.groups, epilogue.has_bias ? " bias" : "",
                                      epilogue.activation == EpilogueActivation::kNone ? "" : " ",
                                      onednn::activation_name(epilogue.activation));
      const std::string what(ir::opcode_name(op));
      const std::string where = inst.source().empty() ? what : inst.source();
      const MatmulPath path = choose_16bit_path(where, what, key, impl->isa, wide->isa, options.cache_dir,
                                                [&] { return time_ms(*impl); }, [&] { return time_ms(*wide); });
      report_16bit_path(t, "convolution", options.choice, impl->isa, wide->isa);
      if (path == MatmulPath::kWidened) impl = std::move(wide);
    }
  } catch (const dnnl::error& e) {
    log(LogLevel::kDebug, str_cat("cpu: oneDNN rejects ", ir::describe(inst), ": ", e.what(), "; reference kernel"));
    return nullptr;
  }
  return std::unique_ptr<ConvolutionKernel>(new ConvolutionKernel(std::move(impl)));
}

void ConvolutionKernel::run(const void* const* in, void* out) const { impl_->run(in, out); }

}  // namespace kiln::cpu
