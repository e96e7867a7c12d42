// The list of reference_fallbacks.h: oneDNN's matmuls, convolutions and pooling take floats of
// 32 bits and less in the layouts, paddings and windows their adapters check, and the
// scatter_add kernel adds f32 and f64.
#include "kiln/runtime/cpu/reference_fallbacks.h"

#include <algorithm>

#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/runtime/cpu/onednn_convolution.h"
#include "kiln/runtime/cpu/onednn_matmul.h"
#include "kiln/runtime/cpu/onednn_pooling.h"

namespace kiln::cpu {
namespace {

using ir::Opcode;

const std::vector<DType> kNotOneDnn = {DType::kF64, DType::kI32, DType::kI64, DType::kU8, DType::kBool};

bool is_onednn_float(DType t) { return t == DType::kF32 || t == DType::kBF16 || t == DType::kF16; }

bool crops(const ir::Instruction& conv) {
  return is_onednn_float(conv.dtype()) && !ConvolutionKernel::takes_padding(conv);
}
bool pools_elsewhere(const ir::Instruction& inst) {
  return is_onednn_float(inst.dtype()) && !PoolingKernel::takes_window(inst);
}
bool unmerged_dims(const ir::Instruction& dot) { return is_onednn_float(dot.dtype()) && !MatmulKernel::can_run(dot); }

constexpr std::string_view kCropReason = "a negative padding (a crop): oneDNN's convolutions only pad";
constexpr std::string_view kWindowReason =
    "a window over more than H and W of an NHWC tensor, a negative padding, or a window wholly in padding: "
    "oneDNN's pooling takes none of them";

const std::vector<ReferenceFallbackRule> kRules = {
    {Opcode::kDotGeneral, kNotOneDnn, nullptr, "oneDNN matmul has no f64 or integer form"},
    {Opcode::kDotGeneral, {}, unmerged_dims,
     "batch, free or contracting dims that do not merge into one strided group each: the matmul adapter "
     "views the dot as one (batched) matrix product"},
    {Opcode::kConvolution, kNotOneDnn, nullptr, "oneDNN convolution has no f64 or integer form"},
    {Opcode::kConvolution, {}, crops, kCropReason},
    {Opcode::kConvBackwardInput, kNotOneDnn, nullptr, "oneDNN convolution has no f64 or integer form"},
    {Opcode::kConvBackwardInput, {}, crops, kCropReason},
    {Opcode::kConvBackwardFilter, kNotOneDnn, nullptr, "oneDNN convolution has no f64 or integer form"},
    {Opcode::kConvBackwardFilter, {}, crops, kCropReason},
    {Opcode::kReduceWindow, kNotOneDnn, nullptr, "oneDNN pooling has no f64 or integer form"},
    {Opcode::kReduceWindow, {}, pools_elsewhere, kWindowReason},
    {Opcode::kReduceWindowGrad, kNotOneDnn, nullptr, "oneDNN pooling has no f64 or integer form"},
    {Opcode::kReduceWindowGrad, {}, pools_elsewhere, kWindowReason},
    {Opcode::kScatterAdd, {DType::kBF16, DType::kF16, DType::kI32, DType::kI64, DType::kU8, DType::kBool}, nullptr,
     "the scatter_add kernel adds f32 and f64 only"},
};

bool lists(const ReferenceFallbackRule& r, const ir::Instruction& inst) {
  if (r.op != inst.opcode()) return false;
  if (r.applies != nullptr) return r.applies(inst);
  return std::find(r.dtypes.begin(), r.dtypes.end(), inst.dtype()) != r.dtypes.end();
}

}  // namespace

std::span<const ReferenceFallbackRule> reference_fallback_rules() { return kRules; }

const ReferenceFallbackRule* find_reference_fallback(const ir::Instruction& inst) {
  const ir::Instruction* op = &inst;
  if (inst.opcode() == Opcode::kFusion) {  // an output fusion falls back when its contraction does
    if (inst.attrs().fusion_kind != ir::FusionKind::kOutput) return nullptr;
    std::optional<compiler::OutputFusionInfo> info = compiler::match_output_fusion(*inst.attrs().body);
    if (!info) return nullptr;
    op = info->contraction;
  }
  for (const ReferenceFallbackRule& r : kRules)
    if (lists(r, *op)) return &r;
  return nullptr;
}

const ReferenceFallbackRule* find_reference_fallback(ir::Opcode op, DType dtype) {
  for (const ReferenceFallbackRule& r : kRules)
    if (r.op == op && r.applies == nullptr && std::find(r.dtypes.begin(), r.dtypes.end(), dtype) != r.dtypes.end())
      return &r;
  return nullptr;
}

}  // namespace kiln::cpu
