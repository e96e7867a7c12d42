// VJP rules of the shape and index ops: one row per opcode. Shape ops only move elements, so
// each cotangent moves them back (a slice pads, a pad slices, a broadcast sums).
#include <algorithm>

#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"
#include "kiln/trace/vjp/vjp.h"

namespace kiln::trace {
namespace {

using ir::Opcode;

// d/dx broadcast_in_dim(x) = sum over the new and the stretched dims, then x's dims.
Grads broadcast_vjp(const VjpArgs& a) {
  const Dims& map = a.attrs.dims;
  const Dims& xd = a.x().dims();
  const Dims& yd = a.y().dims();
  std::vector<int> axes;
  for (int64_t r = 0; r < static_cast<int64_t>(yd.size()); ++r) {
    auto it = std::find(map.begin(), map.end(), r);
    bool stretched = it != map.end() && xd[static_cast<size_t>(it - map.begin())] == 1 &&
                     yd[static_cast<size_t>(r)] != 1;
    if (it == map.end() || stretched) axes.push_back(static_cast<int>(r));
  }
  return {reshape(reduce_sum(a.g(), axes), xd)};
}

// d/dx x[start:limit:stride] = the cotangent placed back at those positions, zeros elsewhere.
Grads slice_vjp(const VjpArgs& a) {
  Tensor g = a.g();
  const Dims& xd = a.x().dims();
  Dims low(xd.size()), high(xd.size());
  for (size_t d = 0; d < xd.size(); ++d) {
    int64_t start = a.attrs.starts[d], stride = a.attrs.strides[d];
    int64_t n = g.dims()[d];
    if (stride > 1 && n > 0) {
      // Interleave stride-1 zeros after each element: (.., n, ..) -> (.., n, stride, ..) -> (.., n*stride, ..).
      Dims expanded = g.dims();
      expanded.insert(expanded.begin() + static_cast<std::ptrdiff_t>(d) + 1, 1);
      Dims lo(expanded.size(), 0), hi(expanded.size(), 0);
      hi[d + 1] = stride - 1;
      Tensor spread = pad(reshape(g, expanded), lo, hi);
      Dims merged = g.dims();
      merged[d] = n * stride;
      g = reshape(spread, merged);
      // Keep only positions inside x: start + n*stride may run past the end.
      int64_t keep = std::min(n * stride, xd[d] - start);
      Dims s(g.dims().size(), 0), l = g.dims();
      l[d] = keep;
      g = slice(g, s, l);
    }
    low[d] = start;
    high[d] = xd[d] - start - g.dims()[d];
  }
  return {pad(g, low, high)};
}

// d/dx_i concatenate(x...) = the cotangent's slice at x_i's offset.
Grads concatenate_vjp(const VjpArgs& a) {
  size_t axis = static_cast<size_t>(a.attrs.dims.at(0));
  Grads out;
  int64_t offset = 0;
  for (size_t i = 0; i < a.operands.size(); ++i) {
    const Dims& xd = a.x(i).dims();
    Dims starts(xd.size(), 0), limits = a.g().dims();
    starts[axis] = offset;
    limits[axis] = offset + xd[axis];
    offset += xd[axis];
    out.push_back(a.needs[i] ? slice(a.g(), starts, limits) : Tensor());
  }
  return out;
}

// d/dx pad(x, low, high) = the cotangent cropped back (negative padding cropped x: zeros there).
Grads pad_vjp(const VjpArgs& a) {
  const Dims& xd = a.x().dims();
  size_t r = xd.size();
  Dims regrow_lo(r), regrow_hi(r), starts(r), limits(r);
  for (size_t d = 0; d < r; ++d) {
    regrow_lo[d] = std::max<int64_t>(-a.attrs.starts[d], 0);
    regrow_hi[d] = std::max<int64_t>(-a.attrs.limits[d], 0);
    starts[d] = std::max<int64_t>(a.attrs.starts[d], 0);
    limits[d] = starts[d] + xd[d];
  }
  Tensor g = a.g();
  if (regrow_lo != Dims(r, 0) || regrow_hi != Dims(r, 0)) g = pad(g, regrow_lo, regrow_hi);
  return {slice(g, starts, limits)};
}

const VjpEntry kTable[] = {
    // d/dx broadcast(x) = reduce_sum over broadcast dims
    {Opcode::kBroadcastInDim, broadcast_vjp},
    // d/dx reshape(x) = reshape back
    {Opcode::kReshape, [](const VjpArgs& a) -> Grads { return {reshape(a.g(), a.x().dims())}; }},
    // d/dx transpose(x, p) = transpose(g, inverse(p))
    {Opcode::kTranspose,
     [](const VjpArgs& a) -> Grads {
       Dims inverse(a.attrs.dims.size());
       for (size_t i = 0; i < inverse.size(); ++i)
         inverse[static_cast<size_t>(a.attrs.dims[i])] = static_cast<int64_t>(i);
       return {transpose(a.g(), inverse)};
     }},
    // d/dx slice(x) = pad(g) (with zeros between strided elements)
    {Opcode::kSlice, slice_vjp},
    // d/dx_i concatenate = slice i of g
    {Opcode::kConcatenate, concatenate_vjp},
    // d/dx pad(x) = slice(g); the pad value is an attribute
    {Opcode::kPad, pad_vjp},
    // iota: no operands
    {Opcode::kIota, nullptr},
    // d/dx take(x, i) = scatter_add(0, i, g); indices get none
    {Opcode::kGather,
     [](const VjpArgs& a) -> Grads {
       return {scatter_add(zeros_like(a.x(0)), a.x(1), a.g(), static_cast<int>(a.attrs.dims[0])),
               Tensor()};
     }},
    // d/dx scatter_add(x, i, u) = g; d/du = take(g, i)
    {Opcode::kScatterAdd,
     [](const VjpArgs& a) -> Grads {
       return {a.g(), Tensor(),
               a.needs[2] ? take(a.g(), a.x(1), static_cast<int>(a.attrs.dims[0])) : Tensor()};
     }},
    // d/dx dynamic_slice(x, s) = g written into zeros at s (the same clamped box); starts get none
    {Opcode::kDynamicSlice,
     [](const VjpArgs& a) -> Grads {
       Grads grads(a.operands.size());
       std::vector<Tensor> starts(a.operands.begin() + 1, a.operands.end());
       grads[0] = dynamic_update_slice(zeros_like(a.x(0)), a.g(), starts);
       return grads;
     }},
    // d/dx dynamic_update_slice(x, u, s) = g with the box zeroed; d/du = the box of g
    {Opcode::kDynamicUpdateSlice,
     [](const VjpArgs& a) -> Grads {
       Grads grads(a.operands.size());
       std::vector<Tensor> starts(a.operands.begin() + 2, a.operands.end());
       if (a.needs[0]) grads[0] = dynamic_update_slice(a.g(), zeros_like(a.x(1)), starts);
       if (a.needs[1]) grads[1] = dynamic_slice(a.g(), starts, a.x(1).dims());
       return grads;
     }},
};

}  // namespace

std::span<const VjpEntry> shape_vjps() { return kTable; }

std::vector<int> to_axes(const Dims& dims) {
  std::vector<int> axes;
  for (int64_t d : dims) axes.push_back(static_cast<int>(d));
  return axes;
}

}  // namespace kiln::trace
