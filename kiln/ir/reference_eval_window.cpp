// Reference evaluation of reduce_window (max and mean pooling over every dim) and its
// gradient. Padding is never a value: max ignores padded positions, and mean divides by the
// number of window elements inside the unpadded input (Keras 'same' average pooling, i.e.
// count_include_pad=False). A window lying wholly in padding gives max = -inf (lowest for
// integers) and mean = 0, and receives no gradient.
#include "kiln/ir/reference_eval_impl.h"

namespace kiln::ir::ref {
namespace {

/// Calls fn(y_at, x_at) for every input element inside each output window: outputs in
/// row-major order, and within a window its positions in row-major order.
template <typename Fn>
void for_each_window_element(const Shape& x, const Shape& y, const Window& w, Fn&& fn) {
  const Dims xs = strides_of(x.dims());
  for_each_index(y.dims(), [&](const Dims& yi, int64_t y_at) {
    for_each_index(w.size, [&](const Dims& ki, int64_t) {
      int64_t x_at = 0;
      for (size_t d = 0; d < ki.size(); ++d) {
        const int64_t at = yi[d] * w.strides[d] - w.padding_low[d] + ki[d];
        if (at < 0 || at >= x.dims()[d]) return;
        x_at += at * xs[d];
      }
      fn(y_at, x_at);
    });
  });
}

[[noreturn]] void bad_kind(const Instruction& inst) {
  KILN_THROW(ShapeError, "[reference_eval/", opcode_name(inst.opcode()),
             "] expected kind max or mean, received ", reduce_kind_name(inst.attrs().reduce_kind), ".");
}

void check_mean_dtype(const Instruction& inst, DType t) {
  if (inst.attrs().reduce_kind == ReduceKind::kMean && !is_floating(t))
    KILN_THROW(DTypeError, "[reference_eval/", opcode_name(inst.opcode()),
               "] mean pooling needs a floating-point operand, received ", t,
               ". Hint: convert to f32 first.");
}

/// For each output window, the x offset of its first maximum (NaN counts as the maximum), or
/// -1 for a window wholly in padding.
template <typename C>
std::vector<int64_t> first_max_positions(std::span<const C> x, const Shape& xs, const Shape& ys,
                                         const Window& w) {
  std::vector<int64_t> where(static_cast<size_t>(ys.num_elements()), -1);
  for_each_window_element(xs, ys, w, [&](int64_t y_at, int64_t x_at) {
    int64_t& best = where[static_cast<size_t>(y_at)];
    if (best < 0 || beats<C>(x[static_cast<size_t>(x_at)], x[static_cast<size_t>(best)])) best = x_at;
  });
  return where;
}

/// Number of unpadded input elements in each output window.
std::vector<int64_t> window_counts(const Shape& xs, const Shape& ys, const Window& w) {
  std::vector<int64_t> count(static_cast<size_t>(ys.num_elements()), 0);
  for_each_window_element(xs, ys, w, [&](int64_t y_at, int64_t) { ++count[static_cast<size_t>(y_at)]; });
  return count;
}

}  // namespace

HostTensor eval_reduce_window(const Instruction& inst, const HostTensor& x) {
  check_mean_dtype(inst, x.dtype());
  const ReduceKind kind = inst.attrs().reduce_kind;
  if (kind != ReduceKind::kMax && kind != ReduceKind::kMean) bad_kind(inst);
  return reduce_groups(x, inst.shape(), kind, [&](auto&& fn) {
    for_each_window_element(x.shape(), inst.shape(), inst.attrs().window, fn);
  });
}

// max: each window's dy goes to the first maximum of that window; mean: dy / count goes to
// every unpadded element of the window. Overlapping windows add up.
HostTensor eval_reduce_window_grad(const Instruction& inst, const HostTensor& x, const HostTensor& dy) {
  check_mean_dtype(inst, x.dtype());
  const Window& w = inst.attrs().window;
  const HostTensor wx = widen(x), wdy = widen(dy);
  return visit_accumulation(x.dtype(), [&](auto c_tag, auto acc_tag) {
    using C = typename decltype(c_tag)::type;
    using Acc = typename decltype(acc_tag)::type;
    auto g = wdy.data<C>();
    std::vector<Acc> dx(static_cast<size_t>(x.num_elements()), Acc(0));
    switch (inst.attrs().reduce_kind) {
      case ReduceKind::kMax: {
        const std::vector<int64_t> where = first_max_positions<C>(wx.data<C>(), x.shape(), dy.shape(), w);
        for (size_t y_at = 0; y_at < where.size(); ++y_at)
          if (where[y_at] >= 0)
            dx[static_cast<size_t>(where[y_at])] =
                wrapping_add(dx[static_cast<size_t>(where[y_at])], static_cast<Acc>(g[y_at]));
        return tensor_from(std::vector<C>(dx.begin(), dx.end()), inst.shape());
      }
      case ReduceKind::kMean: {
        const std::vector<int64_t> count = window_counts(x.shape(), dy.shape(), w);
        for_each_window_element(x.shape(), dy.shape(), w, [&](int64_t y_at, int64_t x_at) {
          dx[static_cast<size_t>(x_at)] += static_cast<Acc>(g[static_cast<size_t>(y_at)]) /
                                           static_cast<Acc>(count[static_cast<size_t>(y_at)]);
        });
        return tensor_from(std::vector<C>(dx.begin(), dx.end()), inst.shape());
      }
      case ReduceKind::kSum: case ReduceKind::kMin: break;
    }
    bad_kind(inst);
  });
}

}  // namespace kiln::ir::ref
