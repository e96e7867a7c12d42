// Helpers for compiler tests: a CPU-like TargetInfo and a pass runner that returns IR text.
#pragma once

#include <string>

#include "kiln/compiler/pass.h"
#include "kiln/compiler/target_info.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/verifier.h"

namespace kiln::compiler::testing {

/// Runs every op, wants every fusion, 64-byte alignment, 1 GiB.
class TestTarget final : public TargetInfo {
 public:
  std::string name() const override { return "test"; }
  Decision supports(const ir::Instruction&) const override { return Decision::yes(); }
  int64_t memory_limit_bytes() const override { return int64_t{1} << 30; }
};

/// Runs `pass` once, checks the result with the IR verifier and returns the module's text.
inline std::string run_and_print(Pass& pass, ir::Module& module, bool* changed = nullptr) {
  bool c = pass.run(module);
  ir::verify(module);
  if (changed != nullptr) *changed = c;
  return ir::to_string(module);
}

}  // namespace kiln::compiler::testing
