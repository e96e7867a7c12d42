// DcePass: dead code elimination.
#pragma once

#include "kiln/compiler/pass.h"

namespace kiln::compiler {

/// Removes instructions no output depends on, in the entry computation and in every fusion
/// body, then removes computations no fusion refers to any more.
///
/// Deliberately does not remove: parameters (the caller passes every argument; an unused one
/// still has a place in the signature), or instructions with side effects beyond their value
/// (Kiln has none: rng_bits is a pure function of its key, all_reduce's value is unused if
/// dead in every replica alike).
///
/// Needs: nothing. Keeps: outputs, parameters, aliases.
class DcePass final : public Pass {
 public:
  std::string_view name() const override { return "dce"; }
  bool run(ir::Module& module) override;
};

}  // namespace kiln::compiler
