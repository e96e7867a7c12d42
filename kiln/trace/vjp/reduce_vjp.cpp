// VJP rules of the reductions (and the other ops that reduce: argmax, rng_bits).
// reduce_max/min split the cotangent evenly among tied extrema, as central differences do.
#include "kiln/trace/emit.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/vjp/vjp.h"

namespace kiln::trace {
namespace {

using ir::Opcode;

// d/dx max(x) = [x == max] / count(x == max)
Grads extremum_vjp(const VjpArgs& a) {
  const Dims& axes = a.attrs.dims;
  Tensor hit = equal(a.x(), unreduce(a.y(), a.x().dims(), axes));
  Tensor count = reduce_sum(cast(hit, a.x().dtype()), to_axes(axes));
  return {where(hit, unreduce(a.g() / count, a.x().dims(), axes), 0.0)};
}

const VjpEntry kTable[] = {
    // d/dx sum(x) = 1 at every reduced position: broadcast g back
    {Opcode::kReduceSum,
     [](const VjpArgs& a) -> Grads { return {unreduce(a.g(), a.x().dims(), a.attrs.dims)}; }},
    // d/dx max(x) = [x == max] / (number of ties)
    {Opcode::kReduceMax, extremum_vjp},
    // d/dx min(x) = [x == min] / (number of ties)
    {Opcode::kReduceMin, extremum_vjp},
    // argmax: integer result, no gradient
    {Opcode::kArgmax, nullptr},
    // rng_bits: integer result, no gradient
    {Opcode::kRngBits, nullptr},
};

}  // namespace

std::span<const VjpEntry> reduce_vjps() { return kTable; }

}  // namespace kiln::trace
