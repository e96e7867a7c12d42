// DCE: unreachable instructions, then unreferenced computations.
#include "kiln/compiler/passes/dce.h"

namespace kiln::compiler {

bool DcePass::run(ir::Module& module) {
  int removed = 0;
  for (const auto& computation : module.computations()) removed += computation->remove_dead();
  size_t before = module.computations().size();
  module.remove_unused_computations();
  size_t dropped = before - module.computations().size();
  if (removed > 0) note(str_cat("removed ", removed, " dead instructions"));
  if (dropped > 0) note(str_cat("removed ", dropped, " unused computations"));
  return removed > 0 || dropped > 0;
}

}  // namespace kiln::compiler
