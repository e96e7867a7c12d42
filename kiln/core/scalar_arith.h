// ScalarArith<T>: the arithmetic that the elementwise table's math (ir/elementwise.def) and
// the loop registers' ops (compiler/codegen/loop_ir.h) are written over, on single values of
// T. The reference evaluator instantiates it over each compute type (f32, f64, the integers,
// bool), the loop interpreter over its registers (f32 or f64); the code generator has the
// same vocabulary over LLVM values (compiler/codegen/ir_value_arith_impl.h). Each function is
// one IEEE operation, one libm call or one of core/float_math.h's recipes, so a row's math
// gives the same bits in every engine.
//
// Integers follow XLA, so no input is undefined behaviour: + - * wrap (two's complement),
// x / 0 is -1 (all bits set), INT_MIN / -1 is INT_MIN, x rem 0 is x and INT_MIN rem -1 is 0.
// bool: + is or, * is and.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kiln/core/float_math.h"
#include "kiln/core/half.h"

namespace kiln::arith {

/// A libm function by name: ScalarArith calls `fn` (std::name, so f32 gets namef), generated
/// code the function `name` (namef for f32 registers, __nv_name[f] from libdevice on NVPTX).
template <class Fn>
struct Libm {
  const char* name;
  Fn fn;
};
#define KILN_LIBM(fn) ::kiln::arith::Libm{#fn, [](auto... v) { return std::fn(v...); }}

template <typename T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T>;

/// a + b; integers wrap (two's complement), bool is logical or.
template <typename T>
T wrapping_add(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a || b;
  else if constexpr (kIsFloat<T>) return a + b;
  else return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b));
}

/// a - b; integers wrap.
template <typename T>
T wrapping_sub(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a != b;
  else if constexpr (kIsFloat<T>) return a - b;
  else return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) - static_cast<std::make_unsigned_t<T>>(b));
}

/// a * b; integers wrap, bool is logical and.
template <typename T>
T wrapping_mul(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a && b;
  else if constexpr (kIsFloat<T>) return a * b;
  else return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) * static_cast<std::make_unsigned_t<T>>(b));
}

template <class T>
struct ScalarArith {
  using V = T;
  using B = bool;

  static V c(double v) {
    if constexpr (std::is_same_v<T, bool>) return v != 0;
    else if constexpr (kIsFloat<T>) return static_cast<T>(v);
    else return static_cast<T>(static_cast<int64_t>(v));  // -1 wraps to 255 for u8
  }
  static V add(V a, V b) { return wrapping_add(a, b); }
  static V sub(V a, V b) { return wrapping_sub(a, b); }
  static V mul(V a, V b) { return wrapping_mul(a, b); }
  static V div(V a, V b) {
    if constexpr (kIsFloat<T>) {
      return a / b;
    } else {
      if (b == 0) return static_cast<T>(~static_cast<std::make_unsigned_t<T>>(0));
      if constexpr (std::is_signed_v<T>)
        if (a == std::numeric_limits<T>::lowest() && b == T(-1)) return a;
      return static_cast<T>(a / b);
    }
  }
  /// The remainder of truncating division, with a's sign (C's fmod, exact for floats).
  static V rem(V a, V b) {
    if constexpr (kIsFloat<T>) {
      return std::fmod(a, b);
    } else {
      if (b == 0) return a;
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return T(0);
      return static_cast<T>(a % b);
    }
  }
  static V neg(V a) {
    if constexpr (kIsFloat<T>) return -a;
    else return wrapping_sub(T(0), a);
  }
  static V abs(V a) {
    if constexpr (kIsFloat<T>) return std::fabs(a);
    else if constexpr (std::is_signed_v<T>) return a < 0 ? wrapping_sub(T(0), a) : a;
    else return a;
  }
  static V sqrt(V a) { return std::sqrt(a); }
  static V floor(V a) { return std::floor(a); }
  static V ceil(V a) { return std::ceil(a); }
  static V trunc(V a) { return std::trunc(a); }
  /// Halves to even: nearbyint in the default rounding mode, which Kiln never changes.
  static V round_even(V a) { return std::nearbyint(a); }
  static V exp(V a) { return float_math::exp(a); }
  static V log(V a) { return float_math::log(a); }
  static V tanh(V a) { return float_math::tanh(a); }
  template <class Fn, class... A>
  static V call(const Libm<Fn>& f, A... a) {
    return f.fn(a...);
  }

  static B lt(V a, V b) { return a < b; }
  static B le(V a, V b) { return a <= b; }
  static B gt(V a, V b) { return a > b; }
  static B ge(V a, V b) { return a >= b; }
  static B eq(V a, V b) { return a == b; }
  static B ne(V a, V b) { return a != b; }  // true when either is NaN
  static B is_nan(V a) {
    if constexpr (kIsFloat<T>) return a != a;
    else return false;
  }
  static B and_(B x, B y) { return x && y; }
  static B or_(B x, B y) { return x || y; }
  static B xor_(B x, B y) { return x != y; }
  static V select(B m, V a, V b) { return m ? a : b; }
  static V from_mask(B m) { return m ? T(1) : T(0); }

  // Register conversions of the loop interpreter (T is float or double): the value rounded
  // to what a dtype holds, read back as a register.
  static V round_f32(V a) { return static_cast<T>(static_cast<float>(a)); }
  static V round_bf16(V a) { return static_cast<T>(static_cast<float>(BF16(static_cast<float>(a)))); }
  static V round_f16(V a) { return static_cast<T>(static_cast<float>(F16(static_cast<float>(a)))); }
  /// The low 32 bits of an exact integer as a signed i32 (IR integer arithmetic wraps).
  static V wrap_i32(V a) { return static_cast<T>(low_i32(static_cast<int64_t>(a))); }
  /// An i32 product in 64-bit integers, wrapped (a double product beyond 2^53 would round).
  static V mul_i32(V a, V b) { return static_cast<T>(low_i32(static_cast<int64_t>(a) * static_cast<int64_t>(b))); }

 private:
  static int32_t low_i32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); }
};

}  // namespace kiln::arith
