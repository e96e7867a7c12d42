// Shape and index ops: argument normalization around single IR instructions.
#include "kiln/trace/ops/shape.h"

#include <numeric>

#include "kiln/trace/emit.h"

namespace kiln {
namespace {

using ir::Opcode;

ir::Attrs axis_attrs(int64_t axis) {
  ir::Attrs a;
  a.dims = {axis};
  return a;
}

}  // namespace

Tensor reshape(const Tensor& x, Dims dims) {
  int64_t known = 1;
  int inferred = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1 && inferred < 0) inferred = static_cast<int>(i);
    else known *= dims[i];
  }
  if (inferred >= 0) {
    if (known <= 0 || x.shape().num_elements() % known != 0)
      KILN_THROW(ShapeError, "[", trace::where("reshape"), "] cannot reshape ", x.shape(),
                 " to ", dims_to_string(dims), ": the element count is not divisible.");
    dims[static_cast<size_t>(inferred)] = x.shape().num_elements() / known;
  }
  if (dims == x.dims()) return x;
  Shape s(x.dtype(), std::move(dims));
  return trace::emit(Opcode::kReshape, {x}, {}, &s);
}

Tensor transpose(const Tensor& x, Dims permutation) {
  if (permutation.empty())
    for (int i = x.rank() - 1; i >= 0; --i) permutation.push_back(i);
  for (int64_t& p : permutation) p = x.shape().normalize_axis(static_cast<int>(p));
  Dims identity(permutation.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (permutation == identity) return x;
  ir::Attrs a;
  a.dims = std::move(permutation);
  return trace::emit(Opcode::kTranspose, {x}, std::move(a));
}

Tensor broadcast_in_dim(const Tensor& x, Dims dims, Dims broadcast_dims) {
  ir::Attrs a;
  a.dims = std::move(broadcast_dims);
  Shape s(x.dtype(), std::move(dims));
  return trace::emit(Opcode::kBroadcastInDim, {x}, std::move(a), &s);
}

Tensor broadcast_to(const Tensor& x, const Dims& dims) {
  if (x.dims() == dims) return x;
  const int64_t r = static_cast<int64_t>(dims.size());
  if (x.rank() > r)
    KILN_THROW(ShapeError, "[", trace::where("broadcast_to"), "] cannot broadcast ", x.shape(),
               " to fewer dims ", dims_to_string(dims), ".");
  Dims map;
  for (int64_t i = 0; i < x.rank(); ++i) map.push_back(i + r - x.rank());
  return broadcast_in_dim(x, dims, std::move(map));
}

Tensor expand_dims(const Tensor& x, int axis) {
  Dims d = x.dims();
  if (axis < 0) axis += x.rank() + 1;
  if (axis < 0 || axis > x.rank())
    KILN_THROW(ShapeError, "[", trace::where("expand_dims"), "] axis ", axis,
               " is out of range for ", x.shape(), ".");
  d.insert(d.begin() + axis, 1);
  return reshape(x, d);
}

Tensor squeeze(const Tensor& x, int axis) {
  int a = x.shape().normalize_axis(axis);
  Dims d = x.dims();
  if (d[static_cast<size_t>(a)] != 1)
    KILN_THROW(ShapeError, "[", trace::where("squeeze"), "] dim ", a, " of ", x.shape(),
               " is not 1.");
  d.erase(d.begin() + a);
  return reshape(x, d);
}

Tensor slice(const Tensor& x, Dims starts, Dims limits, Dims strides) {
  if (strides.empty()) strides.assign(starts.size(), 1);
  if (starts == Dims(starts.size(), 0) && limits == x.dims() && strides == Dims(strides.size(), 1))
    return x;
  ir::Attrs a;
  a.starts = std::move(starts);
  a.limits = std::move(limits);
  a.strides = std::move(strides);
  return trace::emit(Opcode::kSlice, {x}, std::move(a));
}

Tensor concat(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty())
    KILN_THROW(ValueError, "[", trace::where("concat"), "] needs at least one tensor.");
  if (xs.size() == 1) return xs[0];
  return trace::emit(Opcode::kConcatenate, xs, axis_attrs(xs[0].shape().normalize_axis(axis)));
}

Tensor pad(const Tensor& x, Dims low, Dims high, double value) {
  ir::Attrs a;
  a.starts = std::move(low);
  a.limits = std::move(high);
  a.scalar = value;
  return trace::emit(Opcode::kPad, {x}, std::move(a));
}

Tensor iota(const Shape& shape, int axis) {
  return trace::emit(Opcode::kIota, {}, axis_attrs(shape.normalize_axis(axis)), &shape);
}

Tensor take(const Tensor& x, const Tensor& indices, int axis) {
  return trace::emit(Opcode::kGather, {x, indices}, axis_attrs(x.shape().normalize_axis(axis)));
}

Tensor gather(const Tensor& x, const Tensor& indices, int axis) { return take(x, indices, axis); }

Tensor scatter_add(const Tensor& x, const Tensor& indices, const Tensor& updates, int axis) {
  return trace::emit(Opcode::kScatterAdd, {x, indices, updates},
                     axis_attrs(x.shape().normalize_axis(axis)));
}

Tensor dynamic_slice(const Tensor& x, const std::vector<Tensor>& starts, Dims sizes) {
  ir::Attrs a;
  a.limits = std::move(sizes);
  std::vector<Tensor> operands{x};
  operands.insert(operands.end(), starts.begin(), starts.end());
  return trace::emit(Opcode::kDynamicSlice, operands, std::move(a));
}

Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& starts) {
  std::vector<Tensor> operands{x, update};
  operands.insert(operands.end(), starts.begin(), starts.end());
  return trace::emit(Opcode::kDynamicUpdateSlice, operands);
}

}  // namespace kiln
