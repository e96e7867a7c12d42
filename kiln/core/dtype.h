// DType: the element types Kiln tensors hold, their sizes, names and promotion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string_view>

namespace kiln {

/// Element type of a tensor. The order is part of no file format; names are.
/// The lower-case aliases are the names Kiln prints (f32[128,784]), so `DType::f32`, as a
/// user who has read Kiln's messages writes it, also compiles. They equal the k-names: a
/// switch lists only the k-names. (Bool has no alias: `bool` is a keyword.)
/// kString (tf.string) lives only in host tensors: a HostTensor of it holds std::string
/// elements, which flow through a Dataset and into host-side layers (StringLookup,
/// TextVectorization); the IR, kernels and files of numbers refuse it.
enum class DType : uint8_t {
  kF32, kF64, kBF16, kF16, kI32, kI64, kU8, kBool, kString,
  f32 = kF32, f64 = kF64, bf16 = kBF16, f16 = kF16, i32 = kI32, i64 = kI64, u8 = kU8,
  string = kString
};

inline constexpr int kNumDTypes = 9;

/// Bytes per element (a string element is a std::string object: 32 bytes in libstdc++,
/// checked in host_tensor.cpp).
constexpr size_t size_of(DType t) {
  switch (t) {
    case DType::kString:
      return 32;
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kBF16:
    case DType::kF16:
      return 2;
    case DType::kU8:
    case DType::kBool:
      return 1;
  }
  return 0;
}

/// Short name used in IR text and messages: "f32", "bf16", "u8", "bool", ...
std::string_view name(DType t);
/// Parses a short name (also accepts Keras/NumPy spellings such as "float32", "uint8").
/// Throws DTypeError naming the accepted names.
DType parse_dtype(std::string_view text);

constexpr bool is_floating(DType t) {
  return t == DType::kF32 || t == DType::kF64 || t == DType::kBF16 || t == DType::kF16;
}
constexpr bool is_integral(DType t) {
  return t == DType::kI32 || t == DType::kI64 || t == DType::kU8;
}
/// Every dtype but kString: what the IR, kernels and numeric file formats take.
constexpr bool is_numeric(DType t) { return t != DType::kString; }

/// The type both operands convert to in a mixed binary op, as JAX's lattice does:
/// bool < u8 < i32 < i64 < bf16,f16 < f32 < f64; bf16 with f16 gives f32. A string with
/// anything else is a DTypeError.
DType promote(DType a, DType b);

std::ostream& operator<<(std::ostream& os, DType t);

/// Maps C++ element types to DType (float -> kF32, ...).
template <typename T>
struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kF64; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kI64; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kU8; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };

template <typename T>
inline constexpr DType dtype_of = DTypeOf<T>::value;

}  // namespace kiln
