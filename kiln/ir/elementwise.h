// The elementwise op table (elementwise.def) as C++: one struct per row with its math
// (`apply`, a template over the arithmetic) and its columns, a constexpr list of the rows, and
// visit_row, which hands the row of an opcode to a generic function. Everything that handles
// an elementwise op case by case (shape inference, the reference evaluator, the loop
// lowering, the interpreter, the code generator, the tracing functions) is generated from it.
#pragma once

#include <span>
#include <string_view>

#include "kiln/core/dtype.h"
#include "kiln/core/scalar_arith.h"
#include "kiln/ir/opcode.h"

namespace kiln::ir::elementwise {

/// The dtypes a row accepts.
enum class DTypes : uint8_t {
  kFloat,    // f32, f64, bf16, f16
  kNumeric,  // and i32, i64, u8
  kAll,      // and bool
};

/// How a row's result is rounded, which decides where two engines can differ.
enum class Exactness : uint8_t {
  kRepresentable,  // a value of the operand's dtype (one of them, or exact from them): no rounding
  kRounded,        // IEEE operations, the same bits on every engine and device
  kLibm,           // a libm function; libdevice on a GPU differs in the last bits
};

constexpr bool accepts(DTypes d, DType t) {
  switch (d) {
    case DTypes::kFloat: return is_floating(t);
    case DTypes::kNumeric: return t != DType::kBool;
    case DTypes::kAll: return true;
  }
  return false;
}

/// Whether a row of `d` has a form over the C++ compute type T (the reference evaluator's:
/// float, double, the integers, bool).
template <typename T>
constexpr bool accepts_type(DTypes d) {
  if constexpr (std::is_same_v<T, bool>) return d == DTypes::kAll;
  else if constexpr (std::is_floating_point_v<T>) return true;
  else return d != DTypes::kFloat;
}

/// One row's columns, for code that looks a row up by opcode.
struct RowInfo {
  Opcode opcode;
  std::string_view name;
  int arity;
  DTypes dtypes;
  Exactness exactness;
};

// The rows: `apply(m, x)` or `apply(m, a, b)` is the math over an arithmetic m.
#define KILN_UNARY(N, text, fn, dtypes_, exactness_, math)                          \
  struct N {                                                                        \
    static constexpr RowInfo kInfo{Opcode::k##N, text, 1, DTypes::dtypes_, Exactness::exactness_}; \
    template <class M>                                                              \
    static typename M::V apply(M& m, typename M::V x) {                             \
      return math;                                                                  \
    }                                                                               \
  };
#define KILN_BINARY(N, text, fn, dtypes_, exactness_, math)                         \
  struct N {                                                                        \
    static constexpr RowInfo kInfo{Opcode::k##N, text, 2, DTypes::dtypes_, Exactness::exactness_}; \
    template <class M>                                                              \
    static typename M::V apply(M& m, typename M::V a, typename M::V b) {            \
      return math;                                                                  \
    }                                                                               \
  };
#include "kiln/ir/elementwise.def"
#undef KILN_UNARY
#undef KILN_BINARY

inline constexpr RowInfo kRows[] = {
#define KILN_UNARY(N, ...) N::kInfo,
#define KILN_BINARY(N, ...) N::kInfo,
#include "kiln/ir/elementwise.def"
#undef KILN_UNARY
#undef KILN_BINARY
};

/// The row of `op`, or null when `op` is not a row (convert, compare, select, the rest).
inline const RowInfo* find_row(Opcode op) {
  for (const RowInfo& r : kRows)
    if (r.opcode == op) return &r;
  return nullptr;
}

/// Calls fn(Row{}) with the row struct of `op` and returns true, or returns false when `op`
/// is not a row.
template <class Fn>
bool visit_row(Opcode op, Fn&& fn) {
#define KILN_UNARY(N, ...)    \
  if (op == Opcode::k##N) {   \
    fn(N{});                  \
    return true;              \
  }
#define KILN_BINARY(N, ...) KILN_UNARY(N)
#include "kiln/ir/elementwise.def"
#undef KILN_UNARY
#undef KILN_BINARY
  return false;
}

}  // namespace kiln::ir::elementwise
