// Reference evaluation of the elementwise ops: unary math, binary arithmetic, compare, select
// and convert. 16-bit floats are widened to f32, computed, and rounded once to the result.
#include <cmath>
#include <cstring>

#include "kiln/core/float_math.h"
#include "kiln/ir/reference_eval_impl.h"

namespace kiln::ir::ref {
namespace {

[[noreturn]] void no_form(Opcode op, DType t) {
  KILN_THROW(DTypeError, "[reference_eval/", opcode_name(op), "] has no ", t,
             " form: expected a dtype the op accepts, received ", t, ".");
}

template <typename T>
T unary_value(Opcode op, T x) {
  if constexpr (kIsFloat<T>) {
    switch (op) {
      case Opcode::kNeg: return -x;
      case Opcode::kAbs: return std::fabs(x);
      case Opcode::kSign: return (x != x || x == T(0)) ? x : (x > T(0) ? T(1) : T(-1));  // keeps NaN, -0
      case Opcode::kExp: return float_math::exp(x);
      case Opcode::kLog: return float_math::log(x);
      case Opcode::kLog1p: return std::log1p(x);
      case Opcode::kTanh: return float_math::tanh(x);
      case Opcode::kLogistic: return float_math::logistic(x);
      case Opcode::kSqrt: return std::sqrt(x);
      case Opcode::kRsqrt: return T(1) / std::sqrt(x);
      case Opcode::kErf: return std::erf(x);
      default: break;
    }
  } else if constexpr (!std::is_same_v<T, bool>) {
    switch (op) {
      case Opcode::kNeg: return wrapping_sub(T(0), x);
      case Opcode::kAbs:
        if constexpr (std::is_signed_v<T>) return x < 0 ? wrapping_sub(T(0), x) : x;
        return x;
      case Opcode::kSign:
        if constexpr (std::is_signed_v<T>) return x > 0 ? T(1) : (x < 0 ? T(-1) : T(0));
        return x > 0 ? T(1) : T(0);
      default: break;
    }
  }
  no_form(op, dtype_of<T>);
}

// Integer division truncates toward zero; x / 0 is -1 (all bits set) and INT_MIN / -1 is
// INT_MIN, as XLA defines them, so no input is undefined behaviour.
template <typename T>
T divide(T a, T b) {
  if constexpr (kIsFloat<T>) {
    return a / b;
  } else {
    if (b == 0) return static_cast<T>(~static_cast<std::make_unsigned_t<T>>(0));
    if constexpr (std::is_signed_v<T>)
      if (a == std::numeric_limits<T>::lowest() && b == T(-1)) return a;
    return static_cast<T>(a / b);
  }
}

template <typename T>
T binary_value(Opcode op, T a, T b) {
  switch (op) {
    case Opcode::kAdd: return wrapping_add(a, b);
    case Opcode::kSub: return wrapping_sub(a, b);
    case Opcode::kMul: return wrapping_mul(a, b);
    case Opcode::kMax: return nan_max(a, b);
    case Opcode::kMin: return nan_min(a, b);
    case Opcode::kDiv:
      if constexpr (!std::is_same_v<T, bool>) return divide(a, b);
      break;
    case Opcode::kPow:
      if constexpr (kIsFloat<T>) return std::pow(a, b);
      break;
    default: break;
  }
  no_form(op, dtype_of<T>);
}

template <typename T>
bool compare_value(Comparison c, T a, T b) {
  switch (c) {
    case Comparison::kEq: return a == b;
    case Comparison::kNe: return a != b;
    case Comparison::kLt: return a < b;
    case Comparison::kLe: return a <= b;
    case Comparison::kGt: return a > b;
    case Comparison::kGe: return a >= b;
  }
  return false;
}

HostTensor map_unary(const Instruction& inst, const HostTensor& x) {
  HostTensor wx = widen(x);
  HostTensor out(wx.shape());
  visit_compute_dtype(wx.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto src = wx.data<T>();
    auto dst = out.data<T>();
    for (size_t i = 0; i < src.size(); ++i) dst[i] = unary_value(inst.opcode(), src[i]);
  });
  return out.astype(inst.dtype());
}

HostTensor map_binary(const Instruction& inst, const HostTensor& a, const HostTensor& b) {
  HostTensor wa = widen(a), wb = widen(b);
  const bool is_compare = inst.opcode() == Opcode::kCompare;
  HostTensor out(is_compare ? wa.shape().with_dtype(DType::kBool) : wa.shape());
  visit_compute_dtype(wa.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto lhs = wa.data<T>();
    auto rhs = wb.data<T>();
    if (is_compare) {
      auto dst = out.data<bool>();
      for (size_t i = 0; i < lhs.size(); ++i)
        dst[i] = compare_value(inst.attrs().comparison, lhs[i], rhs[i]);
    } else {
      auto dst = out.data<T>();
      for (size_t i = 0; i < lhs.size(); ++i) dst[i] = binary_value(inst.opcode(), lhs[i], rhs[i]);
    }
  });
  return out.astype(inst.dtype());
}

HostTensor select(const HostTensor& predicate, const HostTensor& on_true, const HostTensor& on_false) {
  HostTensor out(on_true.shape());
  const size_t width = size_of(out.dtype());
  auto pred = predicate.data<bool>();
  auto* dst = static_cast<std::byte*>(out.raw_data());
  for (size_t i = 0; i < pred.size(); ++i) {
    const auto* src = static_cast<const std::byte*>(pred[i] ? on_true.raw_data() : on_false.raw_data());
    std::memcpy(dst + i * width, src + i * width, width);
  }
  return out;
}

// Float -> integer truncates toward zero, saturates at the type's range, and maps NaN to 0
// (XLA's CPU semantics; C++ leaves these cases undefined). Anything -> bool is `!= 0`.
template <typename D, typename S>
D convert_value(S s) {
  constexpr bool kSrcFloat = !std::is_integral_v<S>;  // float, double, BF16, F16
  if constexpr (std::is_same_v<D, bool>) {
    return to_double(s) != 0.0;
  } else if constexpr (std::is_integral_v<D> && kSrcFloat) {
    const double v = to_double(s);
    if (v != v) return D(0);
    if (v <= static_cast<double>(std::numeric_limits<D>::lowest())) return std::numeric_limits<D>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(std::trunc(v));
  } else if constexpr (std::is_integral_v<D>) {
    return static_cast<D>(s);  // integer -> integer wraps modulo 2^bits
  } else if constexpr (std::is_integral_v<S> && (std::is_same_v<D, float> || std::is_same_v<D, double>)) {
    return static_cast<D>(s);  // one correctly rounded step, exact for large i64
  } else if constexpr (std::is_integral_v<S>) {
    return D(static_cast<float>(s));
  } else {
    return from_double<D>(to_double(s));
  }
}

}  // namespace

HostTensor eval_elementwise(const Instruction& inst, std::span<const HostTensor> args) {
  switch (opcode_family(inst.opcode())) {
    case OpFamily::Unary: return map_unary(inst, args[0]);
    case OpFamily::Binary: case OpFamily::Compare: return map_binary(inst, args[0], args[1]);
    case OpFamily::Select: return select(args[0], args[1], args[2]);
    default: break;
  }
  KILN_CHECK(false, opcode_name(inst.opcode()), " is not elementwise");
}

HostTensor eval_convert(const Instruction& inst, const HostTensor& x) {
  HostTensor out(inst.shape());
  visit_dtype(x.dtype(), [&](auto src_tag) {
    using S = typename decltype(src_tag)::type;
    visit_dtype(out.dtype(), [&](auto dst_tag) {
      using D = typename decltype(dst_tag)::type;
      const S* src = static_cast<const S*>(x.raw_data());
      D* dst = static_cast<D*>(out.raw_data());
      for (int64_t i = 0; i < x.num_elements(); ++i) dst[i] = convert_value<D>(src[i]);
    });
  });
  return out;
}

}  // namespace kiln::ir::ref
