// visit_dtype: calls a generic lambda with a value of the C++ element type of a DType, so
// type-generic code (conversions, reference kernels) is written once.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kiln/core/check.h"
#include "kiln/core/dtype.h"
#include "kiln/core/half.h"

namespace kiln {

template <typename T>
struct TypeTag {
  using type = T;
};

/// Calls fn(TypeTag<T>{}) where T is float, double, BF16, F16, int32_t, int64_t, uint8_t or bool.
/// kString has no arithmetic: a DTypeError (the numeric code calling this names no strings).
template <typename Fn>
decltype(auto) visit_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::kF32: return fn(TypeTag<float>{});
    case DType::kF64: return fn(TypeTag<double>{});
    case DType::kBF16: return fn(TypeTag<BF16>{});
    case DType::kF16: return fn(TypeTag<F16>{});
    case DType::kI32: return fn(TypeTag<int32_t>{});
    case DType::kI64: return fn(TypeTag<int64_t>{});
    case DType::kU8: return fn(TypeTag<uint8_t>{});
    case DType::kBool: return fn(TypeTag<bool>{});
    case DType::kString:
      KILN_THROW(DTypeError, "[dtype] a string tensor where a numeric one is expected. Hint: turn "
                 "strings into ids first (StringLookup, TextVectorization).");
  }
  return fn(TypeTag<float>{});
}

/// Converts any element type to double (exact for every Kiln dtype but i64 beyond 2^53).
template <typename T>
inline double to_double(T v) {
  if constexpr (std::is_same_v<T, BF16> || std::is_same_v<T, F16>)
    return static_cast<double>(static_cast<float>(v));
  else
    return static_cast<double>(v);
}

/// Converts a double to any element type (16-bit floats round via f32).
template <typename T>
inline T from_double(double v) {
  if constexpr (std::is_same_v<T, BF16> || std::is_same_v<T, F16>)
    return T(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, bool>)
    return v != 0.0;
  else
    return static_cast<T>(v);
}

}  // namespace kiln
