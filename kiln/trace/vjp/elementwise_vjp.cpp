// VJP rules of the elementwise ops: one row per opcode with its derivative beside it.
// max/min split ties evenly (0.5 each), which is what central differences measure at a tie.
#include <cmath>
#include <numbers>

#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/vjp/vjp.h"

namespace kiln::trace {
namespace {

using ir::Opcode;

// Weight of `a` in d max(a, b): 1 where a wins, 0.5 at ties, 0 where b wins.
Tensor win_weight(const Tensor& a, const Tensor& b, bool for_max) {
  Tensor wins = for_max ? greater(a, b) : less(a, b);
  return cast(wins, a.dtype()) + cast(equal(a, b), a.dtype()) * 0.5;
}

Grads extremum(const VjpArgs& a, bool for_max) {
  Tensor ga = a.g() * win_weight(a.x(0), a.x(1), for_max);
  return {ga, a.needs[1] ? a.g() - ga : Tensor()};
}

const VjpEntry kTable[] = {
    // d/dx -x = -1
    {Opcode::kNeg, [](const VjpArgs& a) -> Grads { return {-a.g()}; }},
    // d/dx |x| = sign(x)
    {Opcode::kAbs, [](const VjpArgs& a) -> Grads { return {a.g() * sign(a.x())}; }},
    // d/dx sign(x) = 0
    {Opcode::kSign, [](const VjpArgs& a) -> Grads { return {zeros_like(a.x())}; }},
    // d/dx exp(x) = exp(x)
    {Opcode::kExp, [](const VjpArgs& a) -> Grads { return {a.g() * a.y()}; }},
    // d/dx log(x) = 1 / x
    {Opcode::kLog, [](const VjpArgs& a) -> Grads { return {a.g() / a.x()}; }},
    // d/dx log1p(x) = 1 / (1 + x)
    {Opcode::kLog1p, [](const VjpArgs& a) -> Grads { return {a.g() / (a.x() + 1.0)}; }},
    // d/dx tanh(x) = 1 - tanh(x)^2
    {Opcode::kTanh, [](const VjpArgs& a) -> Grads { return {a.g() * (1.0 - a.y() * a.y())}; }},
    // d/dx logistic(x) = y (1 - y)
    {Opcode::kLogistic, [](const VjpArgs& a) -> Grads { return {a.g() * a.y() * (1.0 - a.y())}; }},
    // d/dx sqrt(x) = 0.5 / sqrt(x)
    {Opcode::kSqrt, [](const VjpArgs& a) -> Grads { return {a.g() * 0.5 / a.y()}; }},
    // d/dx x^-1/2 = -0.5 x^-3/2 = -0.5 y / x
    {Opcode::kRsqrt, [](const VjpArgs& a) -> Grads { return {a.g() * -0.5 * a.y() / a.x()}; }},
    // d/dx erf(x) = 2/sqrt(pi) exp(-x^2)
    {Opcode::kErf,
     [](const VjpArgs& a) -> Grads {
       return {a.g() * (2.0 / std::sqrt(std::numbers::pi)) * exp(-(a.x() * a.x()))};
     }},
    // d/dx expm1(x) = e^x = expm1(x) + 1
    {Opcode::kExpm1, [](const VjpArgs& a) -> Grads { return {a.g() * (a.y() + 1.0)}; }},
    // d/dx sin(x) = cos(x)
    {Opcode::kSin, [](const VjpArgs& a) -> Grads { return {a.g() * cos(a.x())}; }},
    // d/dx cos(x) = -sin(x)
    {Opcode::kCos, [](const VjpArgs& a) -> Grads { return {-(a.g() * sin(a.x()))}; }},
    // floor, ceil, round: piecewise constant, so 0 (as Keras's and JAX's gradients)
    {Opcode::kFloor, [](const VjpArgs& a) -> Grads { return {zeros_like(a.x())}; }},
    {Opcode::kCeil, [](const VjpArgs& a) -> Grads { return {zeros_like(a.x())}; }},
    {Opcode::kRound, [](const VjpArgs& a) -> Grads { return {zeros_like(a.x())}; }},
    // d/dx convert(x) = convert back (integer operands get none)
    {Opcode::kConvert,
     [](const VjpArgs& a) -> Grads {
       return {is_floating(a.x().dtype()) ? cast(a.g(), a.x().dtype()) : Tensor()};
     }},
    // d/da (a + b) = 1, d/db = 1
    {Opcode::kAdd, [](const VjpArgs& a) -> Grads { return {a.g(), a.g()}; }},
    // d/da (a - b) = 1, d/db = -1
    {Opcode::kSub,
     [](const VjpArgs& a) -> Grads { return {a.g(), a.needs[1] ? -a.g() : Tensor()}; }},
    // d/da (a b) = b, d/db = a
    {Opcode::kMul,
     [](const VjpArgs& a) -> Grads {
       return {a.needs[0] ? a.g() * a.x(1) : Tensor(), a.needs[1] ? a.g() * a.x(0) : Tensor()};
     }},
    // d/da (a / b) = 1 / b, d/db = -a / b^2 = -y / b
    {Opcode::kDiv,
     [](const VjpArgs& a) -> Grads {
       return {a.needs[0] ? a.g() / a.x(1) : Tensor(),
               a.needs[1] ? -(a.g() * a.y() / a.x(1)) : Tensor()};
     }},
    // d/da a^b = b a^(b-1), d/db a^b = a^b log(a) (taken as 0 where a <= 0)
    {Opcode::kPow,
     [](const VjpArgs& a) -> Grads {
       Tensor ga, gb;
       if (a.needs[0]) ga = a.g() * a.x(1) * pow(a.x(0), a.x(1) - 1.0);
       if (a.needs[1]) {
         Tensor positive = greater(a.x(0), 0.0);
         Tensor safe = where(positive, a.x(0), 1.0);
         gb = where(positive, a.g() * a.y() * log(safe), 0.0);
       }
       return {ga, gb};
     }},
    // d/da max(a, b) = [a > b] + 0.5 [a == b], d/db = the rest
    {Opcode::kMax, [](const VjpArgs& a) -> Grads { return extremum(a, /*for_max=*/true); }},
    // d/da min(a, b) = [a < b] + 0.5 [a == b], d/db = the rest
    {Opcode::kMin, [](const VjpArgs& a) -> Grads { return extremum(a, /*for_max=*/false); }},
    // d/da atan2(a, b) = b / (a^2 + b^2), d/db = -a / (a^2 + b^2)
    {Opcode::kAtan2,
     [](const VjpArgs& a) -> Grads {
       Tensor scale = a.g() / (a.x(0) * a.x(0) + a.x(1) * a.x(1));
       return {a.needs[0] ? scale * a.x(1) : Tensor(), a.needs[1] ? -(scale * a.x(0)) : Tensor()};
     }},
    // mod(a, b) = a - floor(a / b) b: d/da = 1, d/db = -floor(a / b)
    {Opcode::kMod,
     [](const VjpArgs& a) -> Grads {
       return {a.g(), a.needs[1] ? -(a.g() * floor(a.x(0) / a.x(1))) : Tensor()};
     }},
    // compare: piecewise constant, no gradient
    {Opcode::kCompare, nullptr},
    // d/dt select(p, t, f) = [p], d/df = [!p]; p gets none
    {Opcode::kSelect,
     [](const VjpArgs& a) -> Grads {
       Tensor zero = zeros_like(a.g());
       return {Tensor(), a.needs[1] ? where(a.x(0), a.g(), zero) : Tensor(),
               a.needs[2] ? where(a.x(0), zero, a.g()) : Tensor()};
     }},
};

}  // namespace

std::span<const VjpEntry> elementwise_vjps() { return kTable; }

}  // namespace kiln::trace
