// Reference evaluation of the data-movement ops (broadcast_in_dim, reshape, transpose, slice,
// concatenate, pad, iota) and the index ops (gather, scatter_add). Moves copy whole elements
// as bytes, so they are exact for every dtype.
#include <algorithm>
#include <cstring>

#include "kiln/ir/reference_eval_impl.h"

namespace kiln::ir::ref {
namespace {

/// The result of `shape` whose element at each index is the element `source_of(index)` of
/// `src`, or `fill` (one element's bytes) where source_of returns -1.
template <typename SourceOf>
HostTensor gather_elements(const HostTensor& src, const Shape& shape, SourceOf&& source_of,
                           const HostTensor* fill = nullptr) {
  HostTensor out(shape);
  const size_t width = size_of(shape.dtype());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  const auto* from = static_cast<const std::byte*>(src.raw_data());
  for_each_index(shape.dims(), [&](const Dims& index, int64_t linear) {
    const int64_t s = source_of(index);
    const std::byte* element =
        s >= 0 ? from + s * static_cast<int64_t>(width) : static_cast<const std::byte*>(fill->raw_data());
    std::memcpy(dst + linear * static_cast<int64_t>(width), element, width);
  });
  return out;
}

HostTensor broadcast_in_dim(const Instruction& inst, const HostTensor& x) {
  const Dims strides = strides_of(x.dims());
  const Dims& map = inst.attrs().dims;  // operand dim i -> result dim map[i]
  return gather_elements(x, inst.shape(), [&](const Dims& index) {
    int64_t s = 0;
    for (size_t i = 0; i < map.size(); ++i)
      if (x.dims()[i] != 1) s += index[static_cast<size_t>(map[i])] * strides[i];
    return s;
  });
}

HostTensor transpose(const Instruction& inst, const HostTensor& x) {
  const Dims strides = strides_of(x.dims());
  const Dims& perm = inst.attrs().dims;  // result dim j is operand dim perm[j]
  return gather_elements(x, inst.shape(), [&](const Dims& index) {
    int64_t s = 0;
    for (size_t j = 0; j < perm.size(); ++j) s += index[j] * strides[static_cast<size_t>(perm[j])];
    return s;
  });
}

HostTensor slice(const Instruction& inst, const HostTensor& x) {
  const Dims strides = strides_of(x.dims());
  const Attrs& a = inst.attrs();
  return gather_elements(x, inst.shape(), [&](const Dims& index) {
    int64_t s = 0;
    for (size_t i = 0; i < index.size(); ++i) s += (a.starts[i] + index[i] * a.strides[i]) * strides[i];
    return s;
  });
}

// Edge padding: starts = low, limits = high; a negative amount crops that edge.
HostTensor pad(const Instruction& inst, const HostTensor& x) {
  const Dims strides = strides_of(x.dims());
  const Dims& low = inst.attrs().starts;
  HostTensor fill = HostTensor(Shape(DType::kF64, {}));
  fill.data<double>()[0] = inst.attrs().scalar;
  fill = fill.astype(x.dtype());
  return gather_elements(x, inst.shape(), [&](const Dims& index) -> int64_t {
    int64_t s = 0;
    for (size_t i = 0; i < index.size(); ++i) {
      const int64_t at = index[i] - low[i];
      if (at < 0 || at >= x.dims()[i]) return -1;
      s += at * strides[i];
    }
    return s;
  }, &fill);
}

HostTensor concatenate(const Instruction& inst, std::span<const HostTensor> xs) {
  const size_t axis = static_cast<size_t>(inst.attrs().dims.at(0));
  HostTensor out(inst.shape());
  const Dims out_strides = strides_of(inst.shape().dims());
  const size_t width = size_of(inst.dtype());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  int64_t offset = 0;  // where this operand starts along `axis`
  for (const HostTensor& x : xs) {
    const auto* src = static_cast<const std::byte*>(x.raw_data());
    for_each_index(x.dims(), [&](const Dims& index, int64_t linear) {
      const int64_t at = offset_of(index, out_strides) + offset * out_strides[axis];
      std::memcpy(dst + at * static_cast<int64_t>(width), src + linear * static_cast<int64_t>(width), width);
    });
    offset += x.dims()[axis];
  }
  return out;
}

/// Index values as i64 (the indices of gather/scatter_add are i32 or i64).
std::vector<int64_t> index_values(const HostTensor& indices) { return indices.to_vector<int64_t>(); }

/// Calls fn(result_or_updates_linear, operand_linear) for every element of the gather shape
/// operand[:axis] + indices + operand[axis+1:], with each index clamped to [0, dim-1] (an
/// empty axis has nothing to read and is skipped).
template <typename Fn>
void for_each_gathered(const Instruction& inst, const Shape& operand, const HostTensor& indices,
                       const Shape& gathered, Fn&& fn) {
  const size_t axis = static_cast<size_t>(inst.attrs().dims.at(0));
  const size_t index_rank = static_cast<size_t>(indices.rank());
  const int64_t axis_size = operand.dims()[axis];
  if (axis_size == 0) return;
  const std::vector<int64_t> picks = index_values(indices);
  const Dims operand_strides = strides_of(operand.dims());
  const Dims index_strides = strides_of(indices.dims());
  for_each_index(gathered.dims(), [&](const Dims& index, int64_t linear) {
    int64_t pick_at = 0;
    for (size_t i = 0; i < index_rank; ++i) pick_at += index[axis + i] * index_strides[i];
    const int64_t pick = std::clamp<int64_t>(picks[static_cast<size_t>(pick_at)], 0, axis_size - 1);
    int64_t s = pick * operand_strides[axis];
    for (size_t d = 0; d < axis; ++d) s += index[d] * operand_strides[d];
    for (size_t d = axis + 1; d < operand_strides.size(); ++d)
      s += index[d + index_rank - 1] * operand_strides[d];
    fn(linear, s);
  });
}

}  // namespace

HostTensor eval_shape_op(const Instruction& inst, std::span<const HostTensor> args) {
  switch (inst.opcode()) {
    case Opcode::kBroadcastInDim: return broadcast_in_dim(inst, args[0]);
    case Opcode::kReshape: return args[0].clone().reshape(inst.shape().dims());  // row-major
    case Opcode::kTranspose: return transpose(inst, args[0]);
    case Opcode::kSlice: return slice(inst, args[0]);
    case Opcode::kConcatenate: return concatenate(inst, args);
    case Opcode::kPad: return pad(inst, args[0]);
#define KILN_SKIP_Shape
#include "kiln/ir/opcode_cases.inc"
      break;
  }
  KILN_CHECK(false, opcode_name(inst.opcode()), " is not a shape op");
}

HostTensor eval_iota(const Instruction& inst) {
  const size_t axis = static_cast<size_t>(inst.attrs().dims.at(0));
  HostTensor wide(inst.shape().with_dtype(DType::kI64));
  auto dst = wide.data<int64_t>();
  for_each_index(inst.shape().dims(), [&](const Dims& index, int64_t linear) {
    dst[static_cast<size_t>(linear)] = index[axis];
  });
  return wide.astype(inst.dtype());
}

HostTensor eval_gather(const Instruction& inst, const HostTensor& operand, const HostTensor& indices) {
  HostTensor out(inst.shape());
  const size_t width = size_of(inst.dtype());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  const auto* src = static_cast<const std::byte*>(operand.raw_data());
  for_each_gathered(inst, operand.shape(), indices, inst.shape(), [&](int64_t at, int64_t from) {
    std::memcpy(dst + at * static_cast<int64_t>(width), src + from * static_cast<int64_t>(width), width);
  });
  return out;
}

// Duplicate indices accumulate: out[clamp(i)] += update, summed in the accumulator type and
// rounded once.
HostTensor eval_scatter_add(const Instruction& inst, std::span<const HostTensor> args) {
  const HostTensor& operand = args[0];
  HostTensor w_operand = widen(operand), w_updates = widen(args[2]);
  return visit_accumulation(operand.dtype(), [&](auto c_tag, auto acc_tag) {
    using C = typename decltype(c_tag)::type;
    using Acc = typename decltype(acc_tag)::type;
    auto base = w_operand.data<C>();
    auto updates = w_updates.data<C>();
    std::vector<Acc> acc(base.begin(), base.end());
    for_each_gathered(inst, operand.shape(), args[1], args[2].shape(), [&](int64_t u, int64_t at) {
      acc[static_cast<size_t>(at)] =
          wrapping_add(acc[static_cast<size_t>(at)], static_cast<Acc>(updates[static_cast<size_t>(u)]));
    });
    return tensor_from(std::vector<C>(acc.begin(), acc.end()), inst.shape());
  });
}

// Starts clamp so the box fits (XLA): start = min(max(start, 0), dim - size).
HostTensor eval_dynamic_slice(const Instruction& inst, std::span<const HostTensor> args) {
  const bool update = inst.opcode() == Opcode::kDynamicUpdateSlice;
  const HostTensor& x = args[0];
  const Dims& xd = x.shape().dims();
  const Dims box = update ? args[1].shape().dims() : inst.shape().dims();
  Dims start(xd.size());
  for (size_t d = 0; d < xd.size(); ++d)
    start[d] = std::clamp(args[(update ? 2 : 1) + d].to_vector<int64_t>()[0], int64_t{0}, xd[d] - box[d]);
  HostTensor out = update ? x.clone() : HostTensor(inst.shape());
  const size_t width = size_of(inst.dtype());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  const auto* src = static_cast<const std::byte*>(update ? args[1].raw_data() : x.raw_data());
  const Dims x_strides = strides_of(xd);
  for_each_index(box, [&](const Dims& index, int64_t linear) {
    Dims at = index;
    for (size_t d = 0; d < at.size(); ++d) at[d] += start[d];
    const int64_t in_x = offset_of(at, x_strides);
    const int64_t from = update ? linear : in_x, to = update ? in_x : linear;
    std::memcpy(dst + to * static_cast<int64_t>(width), src + from * static_cast<int64_t>(width), width);
  });
  return out;
}

}  // namespace kiln::ir::ref
