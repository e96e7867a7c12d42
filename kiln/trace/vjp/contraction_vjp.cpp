// VJP rules of the contractions and windows: dot_general (any batch/contracting dims),
// convolution and its two backward forms, and pooling (reduce_window).
#include <algorithm>

#include "kiln/core/check.h"
#include "kiln/trace/emit.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/shape.h"
#include "kiln/trace/vjp/vjp.h"

namespace kiln::trace {
namespace {

using ir::Opcode;

bool contains(const Dims& d, int64_t v) { return std::find(d.begin(), d.end(), v) != d.end(); }

// Dims of a rank-`rank` operand that are neither batch nor contracting, in order.
Dims free_dims(int rank, const Dims& batch, const Dims& contracting) {
  Dims out;
  for (int64_t i = 0; i < rank; ++i)
    if (!contains(batch, i) && !contains(contracting, i)) out.push_back(i);
  return out;
}

// Cotangent of one dot_general operand ("mine"), given the other ("theirs").
// g = (batch, lhs free, rhs free). Contract g with theirs over batch and their free dims:
// dot_general(g, theirs) = (batch, my free, their contracting dims in ascending order), whose
// last dims pair with my contracting dims; transpose that back into my dim order.
Tensor dot_operand_vjp(const Tensor& g, const Tensor& theirs, int my_rank, const Dims& my_batch,
                       const Dims& my_contracting, const Dims& their_batch,
                       const Dims& their_contracting, bool mine_is_lhs) {
  Dims my_free = free_dims(my_rank, my_batch, my_contracting);
  Dims their_free = free_dims(theirs.rank(), their_batch, their_contracting);
  const int64_t nb = static_cast<int64_t>(my_batch.size());
  // Positions of the free dims of each side inside g.
  int64_t their_free_start = mine_is_lhs ? nb + static_cast<int64_t>(my_free.size()) : nb;
  ir::DotDims d;
  for (int64_t i = 0; i < nb; ++i) d.lhs_batch.push_back(i);
  d.rhs_batch = their_batch;
  for (size_t i = 0; i < their_free.size(); ++i)
    d.lhs_contracting.push_back(their_free_start + static_cast<int64_t>(i));
  d.rhs_contracting = their_free;
  Tensor r = dot_general(g, theirs, d);
  // Label each result dim with the dim of "mine" it stands for.
  Dims labels = my_batch;
  labels.insert(labels.end(), my_free.begin(), my_free.end());
  Dims their_sorted = their_contracting;
  std::sort(their_sorted.begin(), their_sorted.end());
  for (int64_t t : their_sorted) {
    size_t k = static_cast<size_t>(
        std::find(their_contracting.begin(), their_contracting.end(), t) - their_contracting.begin());
    labels.push_back(my_contracting[k]);
  }
  Dims perm(static_cast<size_t>(my_rank));
  for (int64_t i = 0; i < my_rank; ++i)
    perm[static_cast<size_t>(i)] = std::find(labels.begin(), labels.end(), i) - labels.begin();
  return transpose(r, perm);
}

// d/dlhs dot(l, r) = g . r (over r's free dims), d/drhs = g . l (over l's free dims)
Grads dot_vjp(const VjpArgs& a) {
  const ir::DotDims& d = a.attrs.dot;
  Tensor gl, gr;
  if (a.needs[0])
    gl = dot_operand_vjp(a.g(), a.x(1), a.x(0).rank(), d.lhs_batch, d.lhs_contracting,
                         d.rhs_batch, d.rhs_contracting, /*mine_is_lhs=*/true);
  if (a.needs[1])
    gr = dot_operand_vjp(a.g(), a.x(0), a.x(1).rank(), d.rhs_batch, d.rhs_contracting,
                         d.lhs_batch, d.lhs_contracting, /*mine_is_lhs=*/false);
  return {gl, gr};
}

ir::Attrs conv_attrs(const VjpArgs& a) {
  ir::Attrs c;
  c.conv = a.attrs.conv;
  return c;
}

Tensor conv_input_grad(const Tensor& dy, const Tensor& w, const Shape& x, const VjpArgs& a) {
  return emit(Opcode::kConvBackwardInput, {dy, w}, conv_attrs(a), &x);
}
Tensor conv_filter_grad(const Tensor& x, const Tensor& dy, const Shape& w, const VjpArgs& a) {
  return emit(Opcode::kConvBackwardFilter, {x, dy}, conv_attrs(a), &w);
}
Tensor conv_forward(const Tensor& x, const Tensor& w, const VjpArgs& a) {
  return emit(Opcode::kConvolution, {x, w}, conv_attrs(a));
}

Grads reduce_window_grad_vjp(const VjpArgs& a) {
  if (!a.needs[1]) return {Tensor(), Tensor()};
  if (a.attrs.reduce_kind != ir::ReduceKind::kMean)
    KILN_THROW(CompileError, "[GradientTape::gradient] the gradient of reduce_window_grad(",
               ir::reduce_kind_name(a.attrs.reduce_kind), ") with respect to its cotangent "
               "(second-order max pooling) is not supported. Hint: use average pooling, or "
               "stop_gradient() the first-order gradient.");
  ir::Attrs pool;
  pool.window = a.attrs.window;
  pool.reduce_kind = ir::ReduceKind::kMean;
  return {Tensor(), emit(Opcode::kReduceWindow, {a.g()}, pool)};
}

const VjpEntry kTable[] = {
    // d/dl dot(l, r) = g . r,  d/dr dot(l, r) = l . g  (transposed into each operand's layout)
    {Opcode::kDotGeneral, dot_vjp},
    // d/dx conv(x, w) = conv_backward_input(g, w),  d/dw = conv_backward_filter(x, g)
    {Opcode::kConvolution,
     [](const VjpArgs& a) -> Grads {
       return {a.needs[0] ? conv_input_grad(a.g(), a.x(1), a.x(0).shape(), a) : Tensor(),
               a.needs[1] ? conv_filter_grad(a.x(0), a.g(), a.x(1).shape(), a) : Tensor()};
     }},
    // backward_input(dy, w) is linear in each: d/ddy = conv(g, w), d/dw = backward_filter(g, dy)
    {Opcode::kConvBackwardInput,
     [](const VjpArgs& a) -> Grads {
       return {a.needs[0] ? conv_forward(a.g(), a.x(1), a) : Tensor(),
               a.needs[1] ? conv_filter_grad(a.g(), a.x(0), a.x(1).shape(), a) : Tensor()};
     }},
    // backward_filter(x, dy): d/dx = backward_input(dy, g), d/ddy = conv(x, g)
    {Opcode::kConvBackwardFilter,
     [](const VjpArgs& a) -> Grads {
       return {a.needs[0] ? conv_input_grad(a.x(1), a.g(), a.x(0).shape(), a) : Tensor(),
               a.needs[1] ? conv_forward(a.x(0), a.g(), a) : Tensor()};
     }},
    // d/dx pool(x) = reduce_window_grad(x, g): max routes g to the window's max, mean spreads it
    {Opcode::kReduceWindow,
     [](const VjpArgs& a) -> Grads { return {emit(Opcode::kReduceWindowGrad, {a.x(), a.g()}, a.attrs)}; }},
    // reduce_window_grad(x, dy) is linear in dy and piecewise constant in x (d/dx = 0).
    // mean: it is the adjoint of mean pooling, so d/ddy = reduce_window(mean)(g).
    // max: d/ddy picks g at each window's maximum, which no op expresses yet: an error.
    {Opcode::kReduceWindowGrad, reduce_window_grad_vjp},
};

}  // namespace

std::span<const VjpEntry> contraction_vjps() { return kTable; }

}  // namespace kiln::trace
