// NN ops: compositions of elementwise/reduce ops plus the contraction and window wrappers.
#include "kiln/trace/ops/nn.h"

#include "kiln/ir/shape_inference.h"
#include "kiln/trace/emit.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"

namespace kiln {
namespace trace {

std::pair<int64_t, int64_t> same_padding(int64_t in, int64_t window, int64_t stride,
                                         int64_t dilation) {
  int64_t effective = (window - 1) * dilation + 1;
  int64_t out = (in + stride - 1) / stride;
  int64_t total = std::max<int64_t>((out - 1) * stride + effective - in, 0);
  return {total / 2, total - total / 2};
}

}  // namespace trace

namespace {

// Explicit (low, high) padding per spatial dim from Keras "valid"/"same" or explicit values.
void spatial_padding(const std::string& padding, const Dims& explicit_low,
                     const Dims& explicit_high, const Dims& x_dims, const Dims& window,
                     const Dims& strides, const Dims& dilation, Dims* low, Dims* high) {
  if (!explicit_low.empty() || !explicit_high.empty()) {
    *low = explicit_low;
    *high = explicit_high;
    return;
  }
  *low = {0, 0};
  *high = {0, 0};
  if (padding == "valid") return;
  if (padding != "same")
    KILN_THROW(ValueError, "[", trace::where("conv/pool"), "] padding='", padding,
               "' is not supported. Hint: use \"valid\" or \"same\".");
  for (size_t i = 0; i < 2; ++i) {
    auto [lo, hi] = trace::same_padding(x_dims.at(i + 1), window.at(i), strides.at(i),
                                        dilation.at(i));
    (*low)[i] = lo;
    (*high)[i] = hi;
  }
}

// x - max(x) along `axis`. The shift cancels mathematically in every use below, so it stays
// off the tape: the gradient is exact and the backward pass has no max-gradient ops.
Tensor shift_by_max(const Tensor& x, int axis, Tensor* max = nullptr) {
  Tensor m;
  {
    trace::PauseTapes pause;
    m = reduce_max(x, {axis}, /*keepdims=*/true);
  }
  if (max != nullptr) *max = m;
  return x - m;
}

Tensor pool(const Tensor& x, const Pool2DOptions& o, ir::ReduceKind kind) {
  if (x.rank() != 4)
    KILN_THROW(ShapeError, "[", trace::where("pool2d"), "] expects NHWC input, received ",
               x.shape(), ".");
  Dims strides = o.strides.empty() ? o.pool_size : o.strides;
  Dims low, high;
  spatial_padding(o.padding, {}, {}, x.dims(), o.pool_size, strides, {1, 1}, &low, &high);
  ir::Attrs a;
  a.reduce_kind = kind;
  a.window.size = {1, o.pool_size.at(0), o.pool_size.at(1), 1};
  a.window.strides = {1, strides.at(0), strides.at(1), 1};
  a.window.padding_low = {0, low[0], low[1], 0};
  a.window.padding_high = {0, high[0], high[1], 0};
  return trace::emit(ir::Opcode::kReduceWindow, {x}, std::move(a));
}

}  // namespace

Tensor dot_general(const Tensor& lhs, const Tensor& rhs, ir::DotDims dims) {
  ir::Attrs a;
  a.dot = std::move(dims);
  return trace::emit(ir::Opcode::kDotGeneral, {lhs, rhs}, std::move(a));
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  const int ra = a.rank(), rb = b.rank();
  ir::DotDims d;
  if (ra >= 1 && rb >= 1 && rb <= 2) {
    d.lhs_contracting = {ra - 1};
    d.rhs_contracting = {rb - 2 < 0 ? 0 : rb - 2};
  } else if (ra == rb && ra > 2) {
    for (int i = 0; i < ra - 2; ++i) {
      d.lhs_batch.push_back(i);
      d.rhs_batch.push_back(i);
    }
    d.lhs_contracting = {ra - 1};
    d.rhs_contracting = {rb - 2};
  } else {
    KILN_THROW(ShapeError, "[", trace::where("matmul"), "] cannot multiply ", a.shape(), " by ",
               b.shape(), ". Hint: use equal ranks for batched matmul, or a 2-D right operand.");
  }
  return dot_general(a, b, std::move(d));
}

Tensor relu(const Tensor& x) { return maximum(x, 0.0); }

Tensor logsumexp(const Tensor& x, int axis, bool keepdims) {
  Tensor m;
  Tensor shifted = shift_by_max(x, axis, &m);
  Tensor lse = log(reduce_sum(exp(shifted), {axis}, /*keepdims=*/true)) + m;
  return keepdims ? lse : squeeze(lse, axis);
}

Tensor softmax(const Tensor& x, int axis) {
  Tensor e = exp(shift_by_max(x, axis));
  return e / reduce_sum(e, {axis}, /*keepdims=*/true);
}

// (x - m) - log(sum(exp(x - m))): subtracting the small log-sum last keeps f32 precision
// for large logits.
Tensor log_softmax(const Tensor& x, int axis) {
  Tensor shifted = shift_by_max(x, axis);
  return shifted - log(reduce_sum(exp(shifted), {axis}, /*keepdims=*/true));
}

Tensor one_hot(const Tensor& indices, int64_t depth, DType dtype) {
  Dims dims = indices.dims();
  dims.push_back(depth);
  Dims map;
  for (int64_t i = 0; i < indices.rank(); ++i) map.push_back(i);
  Tensor expanded = broadcast_in_dim(indices, dims, map);
  Tensor positions = iota(Shape(indices.dtype(), dims), indices.rank());
  return cast(equal(expanded, positions), dtype);
}

Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits) {
  Dims expected(logits.dims().begin(), logits.dims().end() - (logits.rank() > 0 ? 1 : 0));
  if (logits.rank() < 1 || labels.dims() != expected)
    KILN_THROW(ShapeError, "[", trace::where("sparse_softmax_cross_entropy"), "] labels ",
               labels.shape(), " must have the logits' dims without the class dim: expected ",
               dims_to_string(expected), " for logits ", logits.shape(), ".");
  if (!is_integral(labels.dtype()))
    KILN_THROW(DTypeError, "[", trace::where("sparse_softmax_cross_entropy"),
               "] labels must be integer class ids, received ", labels.shape(),
               ". Hint: use softmax cross-entropy with one-hot targets for soft labels.");
  // log(sum(exp(z))) - z[label] with z = logits - max: the same value, better conditioned.
  Tensor shifted = shift_by_max(logits, -1);
  Tensor picked = reduce_sum(shifted * one_hot(labels, logits.dim(-1), logits.dtype()), {-1});
  return log(reduce_sum(exp(shifted), {-1})) - picked;
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Conv2DOptions& o) {
  if (x.rank() != 4 || w.rank() != 4)
    KILN_THROW(ShapeError, "[", trace::where("conv2d"), "] expects NHWC input and HWIO filter, "
               "received ", x.shape(), " and ", w.shape(), ".");
  ir::Attrs a;
  a.conv.strides = o.strides;
  a.conv.dilation = o.dilation;
  a.conv.groups = o.groups;
  spatial_padding(o.padding, o.padding_low, o.padding_high, x.dims(), {w.dim(0), w.dim(1)}, o.strides,
                  o.dilation, &a.conv.padding_low, &a.conv.padding_high);
  return trace::emit(ir::Opcode::kConvolution, {x, w}, std::move(a));
}

Tensor conv2d_transpose(const Tensor& dy, const Tensor& w, const Dims& x_dims, const Conv2DOptions& o) {
  if (dy.rank() != 4 || w.rank() != 4 || x_dims.size() != 4)
    KILN_THROW(ShapeError, "[", trace::where("conv2d_transpose"), "] expects NHWC input, HWIO filter and NHWC "
               "output dims, received ", dy.shape(), ", ", w.shape(), " and ", dims_to_string(x_dims), ".");
  ir::Attrs a;
  a.conv.strides = o.strides;
  a.conv.dilation = o.dilation;
  a.conv.groups = o.groups;
  spatial_padding(o.padding, o.padding_low, o.padding_high, x_dims, {w.dim(0), w.dim(1)}, o.strides,
                  o.dilation, &a.conv.padding_low, &a.conv.padding_high);
  const Shape x_shape(dy.dtype(), x_dims);
  return trace::emit(ir::Opcode::kConvBackwardInput, {dy, w}, std::move(a), &x_shape);
}

Tensor max_pool2d(const Tensor& x, const Pool2DOptions& o) { return pool(x, o, ir::ReduceKind::kMax); }
Tensor avg_pool2d(const Tensor& x, const Pool2DOptions& o) { return pool(x, o, ir::ReduceKind::kMean); }

}  // namespace kiln
