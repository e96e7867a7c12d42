// Opcode: the enum, names, arities and families generated from opcodes.def.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string_view>

namespace kiln::ir {

enum class Opcode : uint8_t {
#define KILN_OPCODE(enum_name, text, arity, family) enum_name,
#include "kiln/ir/opcodes.def"
#undef KILN_OPCODE
};

enum class OpFamily : uint8_t {
  Leaf, Unary, Binary, Compare, Select, Shape, Index, Reduce, Contraction, Window, Random,
  Collective, Fusion, Control
};

inline constexpr int kNumOpcodes = 0
#define KILN_OPCODE(enum_name, text, arity, family) +1
#include "kiln/ir/opcodes.def"
#undef KILN_OPCODE
    ;
/// The rows of the elementwise table (elementwise.def), which make their own cases everywhere.
inline constexpr int kNumElementwiseRows = 0
#define KILN_UNARY(...) +1
#define KILN_BINARY(...) +1
#include "kiln/ir/elementwise.def"
#undef KILN_UNARY
#undef KILN_BINARY
    ;
// Ops outside the table are handled by hand: a new one must be added where opcodes are
// switched over (the compiler's -Wswitch names the places).
static_assert(kNumOpcodes - kNumElementwiseRows == 36, "opcodes.def changed outside the elementwise table: "
              "update kNumOpcodes users and this count");

std::string_view opcode_name(Opcode op);
/// Number of operands, or -1 for variadic ops.
int opcode_arity(Opcode op);
OpFamily opcode_family(Opcode op);
/// Looks an opcode up by its text name; returns false if there is none.
bool parse_opcode(std::string_view text, Opcode* out);

/// Elementwise ops map each output element to the same-index input elements.
inline bool is_elementwise(Opcode op) {
  OpFamily f = opcode_family(op);
  return f == OpFamily::Unary || f == OpFamily::Binary || f == OpFamily::Compare ||
         f == OpFamily::Select;
}

/// while and conditional: ops yielding several values, read with get_tuple_element.
inline bool is_tuple_op(Opcode op) { return op == Opcode::kWhile || op == Opcode::kConditional; }

std::ostream& operator<<(std::ostream& os, Opcode op);

}  // namespace kiln::ir
