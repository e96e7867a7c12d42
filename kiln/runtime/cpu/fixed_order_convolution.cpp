// FixedOrderConvolution: im2col a chunk of output rows at a time into per-thread scratch, then
// the fixed-order GEMM per group. Shape legend: x (N, H, W, C), w (KH, KW, Cg, F) with
// C = G * Cg and F = G * Fg, y (N, OH, OW, F).
#include "kiln/runtime/cpu/fixed_order_convolution.h"

#include <omp.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/core/half.h"
#include "kiln/core/str_cat.h"
#include "kiln/ir/computation.h"
#include "kiln/runtime/cpu/fixed_order_gemm.h"
#include "kiln/runtime/cpu/onednn_util_impl.h"
#include "kiln/runtime/cpu/team_impl.h"

namespace kiln::cpu {
namespace {

// Output rows gathered per chunk: a multiple of the GEMM's 6-row tile.
constexpr int64_t kChunkRows = 96;

float to_f32(const void* p, int64_t i, DType t) {
  switch (t) {
    case DType::kBF16: return bf16_bits_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::kF16: return f16_bits_to_f32(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

}  // namespace

struct FixedOrderConvolution::Impl {
  DType t = DType::kF32;
  int64_t N = 0, H = 0, W = 0, C = 0, KH = 0, KW = 0, Cg = 0, F = 0, G = 1, Fg = 0, OH = 0, OW = 0;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
  bool has_bias = false;
  compiler::EpilogueActivation activation = compiler::EpilogueActivation::kNone;
  std::string label;

  int64_t K() const { return KH * KW * Cg; }

  // col[r][(kh * KW + kw) * Cg + c] for output rows [r0, r0 + rows) of group g.
  void im2col(const void* x, int64_t r0, int64_t rows, int64_t g, float* col) const {
    const int64_t k = K();
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t row = r0 + r, n = row / (OH * OW), oh = row / OW % OH, ow = row % OW;
      float* dst = col + r * k;
      for (int64_t kh = 0; kh < KH; ++kh) {
        const int64_t ih = oh * sh - ph + kh * dh;
        for (int64_t kw = 0; kw < KW; ++kw, dst += Cg) {
          const int64_t iw = ow * sw - pw + kw * dw;
          if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
            std::fill(dst, dst + Cg, 0.0f);
            continue;
          }
          const int64_t base = ((n * H + ih) * W + iw) * C + g * Cg;
          if (t == DType::kF32) std::copy_n(static_cast<const float*>(x) + base, Cg, dst);
          else for (int64_t c = 0; c < Cg; ++c) dst[c] = to_f32(x, base + c, t);
        }
      }
    }
  }

  void run(const void* const* in, void* out) const {
    const int64_t k = K(), rows_total = N * OH * OW;
    // 16-bit filter and bias widened once per run (exactly); f32 ones are used in place.
    std::vector<float> wide_w, wide_b;
    const float* w = static_cast<const float*>(in[1]);
    const float* bias = has_bias ? static_cast<const float*>(in[2]) : nullptr;
    if (t != DType::kF32) {
      wide_w.resize(static_cast<size_t>(k * F));
      for (int64_t i = 0; i < k * F; ++i) wide_w[static_cast<size_t>(i)] = to_f32(in[1], i, t);
      w = wide_w.data();
      if (has_bias) {
        wide_b.resize(static_cast<size_t>(F));
        for (int64_t i = 0; i < F; ++i) wide_b[static_cast<size_t>(i)] = to_f32(in[2], i, t);
        bias = wide_b.data();
      }
    }
    const int64_t chunks = (rows_total + kChunkRows - 1) / kChunkRows;
    run_on_team(rows_total * k * F >= kParallelThreshold * 8, [&] {
      std::vector<float> col(static_cast<size_t>(kChunkRows * k));
      std::vector<float> tile(t == DType::kF32 ? 0 : static_cast<size_t>(kChunkRows * F));
#pragma omp for schedule(static)
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        const int64_t r0 = chunk * kChunkRows, rows = std::min(kChunkRows, rows_total - r0);
        float* y = t == DType::kF32 ? static_cast<float*>(out) + r0 * F : tile.data();
        for (int64_t g = 0; g < G; ++g) {
          im2col(in[0], r0, rows, g, col.data());
          fixed_order_gemm({.a = col.data(), .lm = k, .lk = 1, .w = w + g * Fg, .ldw = F, .c = y + g * Fg, .ldc = F,
                            .M = rows, .N = Fg, .K = k, .bias = bias != nullptr ? bias + g * Fg : nullptr,
                            .activation = activation, .share_team = false});
        }
        if (t == DType::kF32) continue;
        auto* o = static_cast<uint16_t*>(out) + r0 * F;
        for (int64_t i = 0; i < rows * F; ++i)
          o[i] = t == DType::kBF16 ? f32_to_bf16_bits(tile[static_cast<size_t>(i)]) : f32_to_f16_bits(tile[static_cast<size_t>(i)]);
      }
    });
  }
};

std::unique_ptr<FixedOrderConvolution> FixedOrderConvolution::create(const ir::Instruction& inst) {
  const ir::Instruction* conv = &inst;
  auto impl = std::make_unique<Impl>();
  if (inst.opcode() == ir::Opcode::kFusion) {
    if (inst.attrs().fusion_kind != ir::FusionKind::kOutput) return nullptr;
    std::optional<compiler::OutputFusionInfo> info = compiler::match_output_fusion(*inst.attrs().body);
    if (!info || info->contraction->opcode() != ir::Opcode::kConvolution) return nullptr;
    conv = info->contraction;
    impl->has_bias = info->has_bias;
    impl->activation = info->activation;
  }
  if (conv->opcode() != ir::Opcode::kConvolution) return nullptr;
  const Shape& x = conv->operand(0)->shape();
  const Shape& w = conv->operand(1)->shape();
  const Shape& y = conv->shape();
  impl->t = x.dtype();
  if (impl->t != DType::kF32 && impl->t != DType::kBF16 && impl->t != DType::kF16) return nullptr;
  if (w.dtype() != impl->t || inst.shape().dtype() != impl->t) return nullptr;
  if (impl->has_bias && inst.operand(2)->shape().dtype() != impl->t) return nullptr;
  const ir::ConvDims& cd = conv->attrs().conv;
  if (cd.padding_low[0] < 0 || cd.padding_low[1] < 0) return nullptr;  // a crop: the reference kernel
  impl->N = x.dims()[0], impl->H = x.dims()[1], impl->W = x.dims()[2], impl->C = x.dims()[3];
  impl->KH = w.dims()[0], impl->KW = w.dims()[1], impl->Cg = w.dims()[2], impl->F = w.dims()[3];
  impl->G = cd.groups, impl->Fg = impl->F / cd.groups;
  impl->OH = y.dims()[1], impl->OW = y.dims()[2];
  impl->sh = cd.strides[0], impl->sw = cd.strides[1], impl->dh = cd.dilation[0], impl->dw = cd.dilation[1];
  impl->ph = cd.padding_low[0], impl->pw = cd.padding_low[1];
  impl->label = "convolution";
  if (impl->has_bias) impl->label += "+bias";
  if (impl->activation != compiler::EpilogueActivation::kNone)
    impl->label += str_cat("+", onednn::activation_name(impl->activation));
  impl->label += " (kiln fixed-order)";
  return std::unique_ptr<FixedOrderConvolution>(new FixedOrderConvolution(std::move(impl)));
}

FixedOrderConvolution::FixedOrderConvolution(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FixedOrderConvolution::~FixedOrderConvolution() = default;
void FixedOrderConvolution::run(const void* const* in, void* out) const { impl_->run(in, out); }
const std::string& FixedOrderConvolution::label() const { return impl_->label; }

}  // namespace kiln::cpu
