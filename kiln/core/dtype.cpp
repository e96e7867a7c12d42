// DType names, parsing and promotion.
#include "kiln/core/dtype.h"

#include <array>
#include <ostream>
#include <utility>

#include "kiln/core/check.h"

namespace kiln {
namespace {

constexpr std::array<std::string_view, kNumDTypes> kNames = {"f32", "f64", "bf16", "f16",
                                                              "i32", "i64", "u8",   "bool",
                                                              "string"};

// Rank in the promotion lattice; bf16 and f16 share a rank and meet at f32.
int promotion_rank(DType t) {
  switch (t) {
    case DType::kBool: return 0;
    case DType::kU8: return 1;
    case DType::kI32: return 2;
    case DType::kI64: return 3;
    case DType::kBF16:
    case DType::kF16: return 4;
    case DType::kF32: return 5;
    case DType::kF64: return 6;
    case DType::kString: return -1;
  }
  return -1;
}

}  // namespace

std::string_view name(DType t) {
  auto i = static_cast<size_t>(t);
  KILN_CHECK(i < kNames.size(), "bad DType value ", i);
  return kNames[i];
}

DType parse_dtype(std::string_view text) {
  static constexpr std::pair<std::string_view, DType> kAliases[] = {
      {"float32", DType::kF32}, {"float64", DType::kF64}, {"bfloat16", DType::kBF16},
      {"float16", DType::kF16}, {"int32", DType::kI32},   {"int64", DType::kI64},
      {"uint8", DType::kU8},    {"pred", DType::kBool}, {"str", DType::kString}};
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == text) return static_cast<DType>(i);
  for (const auto& [alias, t] : kAliases)
    if (alias == text) return t;
  KILN_THROW(DTypeError, "[parse_dtype] unknown dtype '", text,
             "'. Hint: use one of f32 f64 bf16 f16 i32 i64 u8 bool string (or float32, uint8, ...).");
}

DType promote(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::kString || b == DType::kString)
    KILN_THROW(DTypeError, "[promote] no common dtype of ", name(a), " and ", name(b),
               ": strings do not mix with numbers. Hint: turn strings into ids first "
               "(StringLookup, TextVectorization).");
  int ra = promotion_rank(a), rb = promotion_rank(b);
  if (ra == rb) return DType::kF32;  // bf16 with f16
  return ra > rb ? a : b;
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << name(t); }

}  // namespace kiln
