// Reference evaluation of reduce_sum/max/min over any set of axes and argmax along one axis.
// Sums of an empty set are 0; max of an empty set is -inf (lowest for integers), min +inf.
#include <algorithm>

#include "kiln/ir/reference_eval_impl.h"

namespace kiln::ir::ref {
namespace {

/// For each operand dim, the result stride it contributes (0 for a reduced dim), so the
/// result offset of an operand index is offset_of(index, result_strides_per_operand_dim).
Dims reduced_strides(const Dims& operand_dims, const Dims& axes) {
  Dims kept;
  for (size_t d = 0; d < operand_dims.size(); ++d)
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) == axes.end())
      kept.push_back(operand_dims[d]);
  const Dims kept_strides = strides_of(kept);
  Dims out(operand_dims.size(), 0);
  for (size_t d = 0, k = 0; d < operand_dims.size(); ++d)
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) == axes.end())
      out[d] = kept_strides[k++];
  return out;
}

}  // namespace

HostTensor eval_reduce(const Instruction& inst, const HostTensor& x) {
  const Opcode op = inst.opcode();
  KILN_CHECK(op == Opcode::kReduceSum || op == Opcode::kReduceMax || op == Opcode::kReduceMin,
             opcode_name(op), " is not a reduction");
  const ReduceKind kind = op == Opcode::kReduceSum   ? ReduceKind::kSum
                          : op == Opcode::kReduceMax ? ReduceKind::kMax
                                                     : ReduceKind::kMin;
  const Dims to_result = reduced_strides(x.dims(), inst.attrs().dims);
  return reduce_groups(x, inst.shape(), kind, [&](auto&& fn) {
    for_each_index(x.dims(), [&](const Dims& index, int64_t linear) { fn(offset_of(index, to_result), linear); });
  });
}

// Index (i32) of the first maximum along the axis; NaN counts as the maximum (first NaN wins,
// as in NumPy). An empty axis gives 0.
HostTensor eval_argmax(const Instruction& inst, const HostTensor& x) {
  const int64_t axis = inst.attrs().dims.at(0);
  const Dims to_result = reduced_strides(x.dims(), inst.attrs().dims);
  const HostTensor wx = widen(x);
  HostTensor out(inst.shape());
  auto result = out.data<int32_t>();
  visit_compute_dtype(wx.dtype(), [&](auto tag) {
    using C = typename decltype(tag)::type;
    auto src = wx.data<C>();
    std::vector<C> best(result.size());
    std::vector<bool> seen(result.size(), false);
    // Row-major order visits each result's axis positions in increasing order.
    for_each_index(x.dims(), [&](const Dims& index, int64_t linear) {
      const size_t at = static_cast<size_t>(offset_of(index, to_result));
      const C v = src[static_cast<size_t>(linear)];
      if (!seen[at] || beats<C>(v, best[at])) {
        seen[at] = true;
        best[at] = v;
        result[at] = static_cast<int32_t>(index[static_cast<size_t>(axis)]);
      }
    });
  });
  return out;
}

}  // namespace kiln::ir::ref
