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

}  // namespace kiln::compiler
