// Kiln's own exp, tanh and log of f32 values. Each is one branch-free recipe computed in f64
// with explicit FMAs, written once over an arithmetic `M` and instantiated twice: over C++
// doubles here (the reference evaluator and the loop interpreter call these) and over LLVM IR
// values by the code generator (compiler/codegen/llvm_emitter.cpp). The same IEEE operations in
// the same order give bit-identical results in all three engines, and the generated loops
// vectorize instead of calling libm's expf/tanhf lane by lane (a third of the LSTM step's time
// went there). Every mul that feeds an add is an explicit fma, so a compiler's contraction
// (GCC's -ffp-contract=fast) has nothing left to change.
//
// Accuracy: the f64 result is within ~1e-13 relatively of the exact value before its single
// rounding to f32, so the f32 result is the correctly rounded one except where the exact value
// lies within ~1e-13 of a rounding midpoint, and never more than 1 ulp away (tests/core/
// float_math_test.cpp checks this against libm's f64 functions). NaN in gives NaN out;
// overflow gives inf, underflow 0 or a subnormal, as IEEE rounding of the f64 value gives.
//
// `M` provides, over lanes of f64 (D), u64 (I) and masks (B): c(double), add, sub, mul, div,
// fma, abs, copysign, lt, gt, eq, is_nan, select(B, D, D), bits(D) -> I, from_bits(I) -> D,
// iadd, isub, iand, ior, shl, shr (logical; the counts and masks are constants) and
// u2d(I) -> D (exact for the small values used here).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>

namespace kiln::float_math {

namespace detail {
inline constexpr double kShifter = 0x1.8p52;  // adding it rounds to an integer held in the low bits
inline constexpr double kInvLn2 = 0x1.71547652b82fep0;
inline constexpr double kLn2Hi = 0x1.62e42fee00000p-1;  // fdlibm's split: kLn2Hi * k is exact
inline constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
inline constexpr double kLn2 = 0x1.62e42fefa39efp-1;
}  // namespace detail

/// e^x in f64 for |x| <= 700: x = k ln2 + r, |r| <= ln2/2, e^r by its Taylor series to r^11
/// (truncation below 7e-15), scaled by 2^k through the exponent bits.
template <class M>
typename M::D exp_f64_core(M& m, typename M::D x) {
  using detail::kShifter;
  const auto t = m.fma(x, m.c(detail::kInvLn2), m.c(kShifter));
  const auto k = m.sub(t, m.c(kShifter));
  auto r = m.fma(k, m.c(-detail::kLn2Hi), x);
  r = m.fma(k, m.c(-detail::kLn2Lo), r);
  // 1/n! for n = 11 .. 2.
  constexpr double kInvFactorial[] = {1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040,
                                      1.0 / 720,      1.0 / 120,     1.0 / 24,     1.0 / 6,     1.0 / 2};
  auto p = m.c(kInvFactorial[0]);
  for (size_t i = 1; i < std::size(kInvFactorial); ++i) p = m.fma(p, r, m.c(kInvFactorial[i]));
  p = m.fma(p, r, m.c(1.0));
  p = m.fma(p, r, m.c(1.0));
  // 2^k: k sits in t's low mantissa bits, so bits(t) - bits(kShifter) is k as a 64-bit integer.
  const auto ki = m.isub(m.bits(t), m.bits(m.c(kShifter)));
  const auto scale = m.from_bits(m.shl(m.iadd(ki, 1023), 52));
  return m.mul(p, scale);
}

/// e^x of an f32 value (given as f64), before the rounding to f32. Inputs are clamped to
/// [-200, 200], which still overflows to inf and underflows to 0 in f32; NaN stays NaN.
template <class M>
typename M::D exp_f32_recipe(M& m, typename M::D x) {
  x = m.select(m.gt(x, m.c(200.0)), m.c(200.0), x);
  x = m.select(m.lt(x, m.c(-200.0)), m.c(-200.0), x);
  return exp_f64_core(m, x);
}

/// tanh of an f32 value (as f64): (e - 1) / (e + 1) with e = e^(2|x|), |x| clamped to 20
/// (tanh is 1 in f32 from 9.01); below 2^-12, tanh(x) rounds to x itself in f32.
template <class M>
typename M::D tanh_f32_recipe(M& m, typename M::D x) {
  auto a = m.abs(x);
  a = m.select(m.gt(a, m.c(20.0)), m.c(20.0), a);
  const auto e = exp_f64_core(m, m.add(a, a));
  const auto t = m.div(m.sub(e, m.c(1.0)), m.add(e, m.c(1.0)));
  return m.copysign(m.select(m.lt(a, m.c(0x1p-12)), a, t), x);
}

/// ln x of an f32 value (as f64): x = 2^e m with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s)
/// with s = (m - 1) / (m + 1), |s| <= 0.172, by its odd series to s^13 (truncation below
/// 2e-12 relatively). f32 subnormals are normal in f64, so need no case of their own.
template <class M>
typename M::D log_f32_recipe(M& m, typename M::D x) {
  const auto bits = m.bits(x);
  auto e = m.sub(m.u2d(m.iand(m.shr(bits, 52), 0x7ff)), m.c(1023.0));
  auto mant = m.from_bits(m.ior(m.iand(bits, 0xfffffffffffffULL), 0x3ff0000000000000ULL));  // in [1, 2)
  const auto big = m.gt(mant, m.c(0x1.6a09e667f3bcdp0));
  mant = m.select(big, m.mul(mant, m.c(0.5)), mant);
  e = m.select(big, m.add(e, m.c(1.0)), e);
  const auto f = m.sub(mant, m.c(1.0));  // exact (Sterbenz)
  const auto s = m.div(f, m.add(f, m.c(2.0)));
  const auto z = m.mul(s, s);
  // 1/(2n+1) for n = 6 .. 1.
  constexpr double kOdd[] = {1.0 / 13, 1.0 / 11, 1.0 / 9, 1.0 / 7, 1.0 / 5, 1.0 / 3};
  auto q = m.c(kOdd[0]);
  for (size_t i = 1; i < std::size(kOdd); ++i) q = m.fma(q, z, m.c(kOdd[i]));
  const auto s2 = m.add(s, s);
  const auto ln_mant = m.fma(m.mul(s2, z), q, s2);
  auto r = m.fma(e, m.c(detail::kLn2), ln_mant);
  r = m.select(m.lt(x, m.c(0.0)), m.c(std::numeric_limits<double>::quiet_NaN()), r);
  r = m.select(m.eq(x, m.c(0.0)), m.c(-std::numeric_limits<double>::infinity()), r);
  r = m.select(m.eq(x, m.c(std::numeric_limits<double>::infinity())), x, r);
  return m.select(m.is_nan(x), m.add(x, x), r);  // an arithmetic NaN: quiet, as the others give
}

/// The recipes' arithmetic over one f64 lane.
struct ScalarArith {
  using D = double;
  using I = uint64_t;
  using B = bool;
  static D c(double v) { return v; }
  static D add(D a, D b) { return a + b; }
  static D sub(D a, D b) { return a - b; }
  static D mul(D a, D b) { return a * b; }
  static D div(D a, D b) { return a / b; }
  static D fma(D a, D b, D c) { return std::fma(a, b, c); }
  static D abs(D a) { return std::fabs(a); }
  static D copysign(D a, D b) { return std::copysign(a, b); }
  static B lt(D a, D b) { return a < b; }
  static B gt(D a, D b) { return a > b; }
  static B eq(D a, D b) { return a == b; }
  static B is_nan(D a) { return a != a; }
  static D select(B m, D a, D b) { return m ? a : b; }
  static I bits(D a) { return std::bit_cast<I>(a); }
  static D from_bits(I a) { return std::bit_cast<D>(a); }
  static I iadd(I a, uint64_t b) { return a + b; }
  static I isub(I a, I b) { return a - b; }
  static I iand(I a, uint64_t b) { return a & b; }
  static I ior(I a, uint64_t b) { return a | b; }
  static I shl(I a, int n) { return a << n; }
  static I shr(I a, int n) { return a >> n; }
  static D u2d(I a) { return static_cast<D>(a); }
};

inline float exp(float x) {
  ScalarArith m;
  return static_cast<float>(exp_f32_recipe(m, static_cast<double>(x)));
}
inline float tanh(float x) {
  ScalarArith m;
  return static_cast<float>(tanh_f32_recipe(m, static_cast<double>(x)));
}
inline float log(float x) {
  ScalarArith m;
  return static_cast<float>(log_f32_recipe(m, static_cast<double>(x)));
}
/// f64 values keep libm's functions, so one spelling serves code templated on the type.
inline double exp(double x) { return std::exp(x); }
inline double tanh(double x) { return std::tanh(x); }
inline double log(double x) { return std::log(x); }
/// 1 / (1 + e^-x) in the value's own arithmetic, as the IR's logistic op is defined.
template <typename T>
T logistic(T x) {
  return T(1) / (T(1) + exp(-x));
}

}  // namespace kiln::float_math
