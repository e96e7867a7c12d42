// Reference evaluation of dot_general and convolution with its two backward forms. Every
// contraction is a list of taps (a_offset, b_offset, result_offset) and result[r] += a * b
// over them; the backward convolutions walk exactly the forward taps with the roles swapped,
// so they are the forward op's transposes by construction.
#include <algorithm>

#include "kiln/ir/reference_eval_impl.h"

namespace kiln::ir::ref {
namespace {

/// result[r] = sum over taps (a_at, b_at, r) of a[a_at] * b[b_at], accumulated in the
/// accumulator type and rounded once. `for_each_tap(fn)` calls fn(a_at, b_at, r).
template <typename ForEachTap>
HostTensor sum_of_products(const HostTensor& a, const HostTensor& b, const Shape& result,
                           ForEachTap&& for_each_tap) {
  const HostTensor wa = widen(a), wb = widen(b);
  return visit_accumulation(a.dtype(), [&](auto c_tag, auto acc_tag) {
    using C = typename decltype(c_tag)::type;
    using Acc = typename decltype(acc_tag)::type;
    auto av = wa.data<C>();
    auto bv = wb.data<C>();
    std::vector<Acc> acc(static_cast<size_t>(result.num_elements()), Acc(0));
    for_each_tap([&](int64_t a_at, int64_t b_at, int64_t r) {
      Acc& sum = acc[static_cast<size_t>(r)];
      sum = wrapping_add(sum, wrapping_mul(static_cast<Acc>(av[static_cast<size_t>(a_at)]),
                                           static_cast<Acc>(bv[static_cast<size_t>(b_at)])));
    });
    return tensor_from(std::vector<C>(acc.begin(), acc.end()), result);
  });
}

Dims free_dims(int rank, const Dims& batch, const Dims& contracting) {
  Dims free;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), d) == contracting.end())
      free.push_back(d);
  return free;
}

// Convolution taps over x: (N, H, W, C), w: (KH, KW, C/groups, F), y: (N, OH, OW, F):
// y[n,oh,ow,f] += x[n, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw, g*C/groups + c] * w[kh,kw,c,f]
// with g = f / (F/groups); taps that land in the padding are skipped.
template <typename Fn>
void for_each_conv_tap(const Shape& x, const Shape& w, const Shape& y, const ConvDims& conv, Fn&& fn) {
  const Dims xs = strides_of(x.dims()), ws = strides_of(w.dims());
  const int64_t group_in = w.dims()[2], group_out = w.dims()[3] / conv.groups;
  for_each_index(y.dims(), [&](const Dims& yi, int64_t y_at) {
    const int64_t n = yi[0], f = yi[3], g = f / group_out;
    for (int64_t kh = 0; kh < w.dims()[0]; ++kh) {
      const int64_t ih = yi[1] * conv.strides[0] - conv.padding_low[0] + kh * conv.dilation[0];
      if (ih < 0 || ih >= x.dims()[1]) continue;
      for (int64_t kw = 0; kw < w.dims()[1]; ++kw) {
        const int64_t iw = yi[2] * conv.strides[1] - conv.padding_low[1] + kw * conv.dilation[1];
        if (iw < 0 || iw >= x.dims()[2]) continue;
        for (int64_t c = 0; c < group_in; ++c)
          fn(n * xs[0] + ih * xs[1] + iw * xs[2] + (g * group_in + c) * xs[3],
             kh * ws[0] + kw * ws[1] + c * ws[2] + f * ws[3], y_at);
      }
    }
  });
}

}  // namespace

HostTensor eval_dot_general(const Instruction& inst, const HostTensor& lhs, const HostTensor& rhs) {
  const DotDims& d = inst.attrs().dot;
  const Dims lhs_free = free_dims(lhs.rank(), d.lhs_batch, d.lhs_contracting);
  const Dims rhs_free = free_dims(rhs.rank(), d.rhs_batch, d.rhs_contracting);
  const Dims ls = strides_of(lhs.dims()), rs = strides_of(rhs.dims());
  Dims contracted;
  for (int64_t c : d.lhs_contracting) contracted.push_back(lhs.dims()[static_cast<size_t>(c)]);
  auto taps = [&](auto&& fn) {
    // Result index order: batch..., lhs free..., rhs free... (StableHLO).
    for_each_index(inst.shape().dims(), [&](const Dims& ri, int64_t r_at) {
      Dims li(static_cast<size_t>(lhs.rank())), rj(static_cast<size_t>(rhs.rank()));
      size_t k = 0;
      for (size_t b = 0; b < d.lhs_batch.size(); ++b, ++k) {
        li[static_cast<size_t>(d.lhs_batch[b])] = ri[k];
        rj[static_cast<size_t>(d.rhs_batch[b])] = ri[k];
      }
      for (int64_t f : lhs_free) li[static_cast<size_t>(f)] = ri[k++];
      for (int64_t f : rhs_free) rj[static_cast<size_t>(f)] = ri[k++];
      for_each_index(contracted, [&](const Dims& ci, int64_t) {
        for (size_t c = 0; c < ci.size(); ++c) {
          li[static_cast<size_t>(d.lhs_contracting[c])] = ci[c];
          rj[static_cast<size_t>(d.rhs_contracting[c])] = ci[c];
        }
        fn(offset_of(li, ls), offset_of(rj, rs), r_at);
      });
    });
  };
  return sum_of_products(lhs, rhs, inst.shape(), taps);
}

HostTensor eval_convolution(const Instruction& inst, const HostTensor& a, const HostTensor& b) {
  const ConvDims& conv = inst.attrs().conv;
  switch (inst.opcode()) {
    case Opcode::kConvolution:  // (x, w) -> y
      return sum_of_products(a, b, inst.shape(), [&](auto&& fn) {
        for_each_conv_tap(a.shape(), b.shape(), inst.shape(), conv, fn);
      });
    case Opcode::kConvBackwardInput:  // (dy, w) -> dx: dx[x_at] += dy[y_at] * w[w_at]
      return sum_of_products(a, b, inst.shape(), [&](auto&& fn) {
        for_each_conv_tap(inst.shape(), b.shape(), a.shape(), conv,
                          [&](int64_t x_at, int64_t w_at, int64_t y_at) { fn(y_at, w_at, x_at); });
      });
    case Opcode::kConvBackwardFilter:  // (x, dy) -> dw: dw[w_at] += x[x_at] * dy[y_at]
      return sum_of_products(a, b, inst.shape(), [&](auto&& fn) {
        for_each_conv_tap(a.shape(), inst.shape(), b.shape(), conv,
                          [&](int64_t x_at, int64_t w_at, int64_t y_at) { fn(x_at, y_at, w_at); });
      });
#define KILN_SKIP_Contraction
#include "kiln/ir/opcode_cases.inc"
    case Opcode::kDotGeneral:
      break;
  }
  KILN_CHECK(false, opcode_name(inst.opcode()), " is not a convolution");
}

}  // namespace kiln::ir::ref
