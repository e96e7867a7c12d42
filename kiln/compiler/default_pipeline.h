// default_pipeline: the pass order every backend compiles with.
#pragma once

#include "kiln/compiler/pass_pipeline.h"
#include "kiln/compiler/target_info.h"

namespace kiln::compiler {

/// algebraic-simplify, constant-folding, cse, dce, the same four once more (a fold or merge
/// often exposes another identity, and on a step of a few hundred instructions they cost
/// well under a millisecond), then output-fusion, reduction-fusion, elementwise-fusion, dce.
/// Memory planning (plan_memory) and legality run in the backend afterwards. `target` must
/// outlive the pipeline.
PassPipeline default_pipeline(const TargetInfo& target);

/// What every backend's compile() does first: check_legality, then the default pipeline under
/// `debug`'s options, with `label` naming the program in dumps.
void check_and_optimize(ir::Module& module, const TargetInfo& target, const DebugOptions& debug,
                        const std::string& label);

}  // namespace kiln::compiler
