// Pass: one small, named transformation of a Module. run() returns whether it changed it.
#pragma once

#include <string_view>

#include "kiln/ir/module.h"

namespace kiln::compiler {

class Pass {
 public:
  virtual ~Pass() = default;
  /// Short id used by KILN_DISABLE_PASSES and dump file names ("cse", "elementwise-fusion").
  virtual std::string_view name() const = 0;
  virtual bool run(ir::Module& module) = 0;
};

}  // namespace kiln::compiler
