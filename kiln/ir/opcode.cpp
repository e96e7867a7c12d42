// Opcode tables generated from opcodes.def.
#include "kiln/ir/opcode.h"

#include <array>
#include <ostream>

namespace kiln::ir {
namespace {

struct OpInfo {
  std::string_view name;
  int arity;
  OpFamily family;
};

constexpr std::array<OpInfo, kNumOpcodes> kInfo = {{
#define KILN_OPCODE(enum_name, text, arity, family) {text, arity, OpFamily::family},
#include "kiln/ir/opcodes.def"
#undef KILN_OPCODE
}};

}  // namespace

std::string_view opcode_name(Opcode op) { return kInfo[static_cast<size_t>(op)].name; }
int opcode_arity(Opcode op) { return kInfo[static_cast<size_t>(op)].arity; }
OpFamily opcode_family(Opcode op) { return kInfo[static_cast<size_t>(op)].family; }

bool parse_opcode(std::string_view text, Opcode* out) {
  for (size_t i = 0; i < kInfo.size(); ++i) {
    if (kInfo[i].name == text) {
      *out = static_cast<Opcode>(i);
      return true;
    }
  }
  return false;
}

std::ostream& operator<<(std::ostream& os, Opcode op) { return os << opcode_name(op); }

}  // namespace kiln::ir
