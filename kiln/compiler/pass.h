// Pass: one small, named transformation of a Module. run() returns whether it changed it.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/ir/module.h"

namespace kiln::compiler {

class Pass {
 public:
  virtual ~Pass() = default;
  /// Short id used by KILN_DISABLE_PASSES and dump file names ("cse", "elementwise-fusion").
  virtual std::string_view name() const = 0;
  virtual bool run(ir::Module& module) = 0;

  /// Decisions the last run() recorded (what was fused or folded and why not), written next to
  /// the IR by KILN_DUMP_IR. The pipeline clears them before each run.
  const std::vector<std::string>& notes() const { return notes_; }
  void clear_notes() { notes_.clear(); }

 protected:
  /// Records one decision ("fused %12 into output_fusion.0", "not fused: %7 has 2 users").
  void note(std::string text) { notes_.push_back(std::move(text)); }

 private:
  std::vector<std::string> notes_;
};

}  // namespace kiln::compiler
