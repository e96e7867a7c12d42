// The list of reference_fallbacks.h: oneDNN's matmuls, convolutions and pooling take floats of
// 32 bits and less, and the scatter_add kernel adds f32 and f64.
#include "kiln/runtime/cpu/reference_fallbacks.h"

#include <algorithm>

namespace kiln::cpu {
namespace {

const std::vector<DType> kNotOneDnn = {DType::kF64, DType::kI32, DType::kI64, DType::kU8, DType::kBool};

const std::vector<ReferenceFallbackRule> kRules = {
    {ir::Opcode::kDotGeneral, kNotOneDnn, "oneDNN matmul has no f64 or integer form"},
    {ir::Opcode::kConvolution, kNotOneDnn, "oneDNN convolution has no f64 or integer form"},
    {ir::Opcode::kConvBackwardInput, kNotOneDnn, "oneDNN convolution has no f64 or integer form"},
    {ir::Opcode::kConvBackwardFilter, kNotOneDnn, "oneDNN convolution has no f64 or integer form"},
    {ir::Opcode::kReduceWindow, kNotOneDnn, "oneDNN pooling has no f64 or integer form"},
    {ir::Opcode::kReduceWindowGrad, kNotOneDnn, "oneDNN pooling has no f64 or integer form"},
    {ir::Opcode::kScatterAdd, {DType::kBF16, DType::kF16, DType::kI32, DType::kI64, DType::kU8, DType::kBool},
     "the scatter_add kernel adds f32 and f64 only"},
};

}  // namespace

std::span<const ReferenceFallbackRule> reference_fallback_rules() { return kRules; }

const ReferenceFallbackRule* find_reference_fallback(ir::Opcode op, DType dtype) {
  for (const ReferenceFallbackRule& r : kRules)
    if (r.op == op && std::find(r.dtypes.begin(), r.dtypes.end(), dtype) != r.dtypes.end()) return &r;
  return nullptr;
}

}  // namespace kiln::cpu
