// Readable IR text: one instruction per line, numbered in post order so that equal programs
// print equally (pass tests compare this text before and after).
#pragma once

#include <string>

#include "kiln/ir/module.h"

namespace kiln::ir {

struct PrintOptions {
  /// Appends `# source` to instructions that know where they came from.
  bool show_sources = false;
};

std::string to_string(const Module& module, PrintOptions options = {});
std::string to_string(const Computation& computation, PrintOptions options = {});
/// One instruction's right-hand side with operands as %id: "f32[2] add(%3, %4)".
std::string describe(const Instruction& instruction);

}  // namespace kiln::ir
