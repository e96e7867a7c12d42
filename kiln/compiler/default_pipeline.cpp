// The default pass order (ARCHITECTURE.md, Compiler).
#include "kiln/compiler/default_pipeline.h"

#include "kiln/compiler/passes/algebraic_simplify.h"
#include "kiln/compiler/passes/backend_legality.h"
#include "kiln/compiler/passes/constant_folding.h"
#include "kiln/compiler/passes/cse.h"
#include "kiln/compiler/passes/dce.h"
#include "kiln/compiler/passes/elementwise_fusion.h"
#include "kiln/compiler/passes/loop_invariant_hoisting.h"
#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/compiler/passes/reduction_fusion.h"

namespace kiln::compiler {

PassPipeline default_pipeline(const TargetInfo& target) {
  PassPipeline pipeline("default");
  for (int round = 0; round < 2; ++round) {
    pipeline.add<AlgebraicSimplifyPass>();
    pipeline.add<ConstantFoldingPass>();
    pipeline.add<CsePass>();
    pipeline.add<DcePass>();
  }
  pipeline.add<LoopInvariantHoistingPass>();
  pipeline.add<OutputFusionPass>(&target);
  pipeline.add<ReductionFusionPass>(&target);
  pipeline.add<ElementwiseFusionPass>(&target);
  pipeline.add<DcePass>();
  return pipeline;
}

void check_and_optimize(ir::Module& module, const TargetInfo& target, const DebugOptions& debug,
                        const std::string& label) {
  check_legality(module, target);
  PipelineOptions options = PipelineOptions::from_debug_options(debug);
  options.label = label;
  default_pipeline(target).run(module, options);
}

}  // namespace kiln::compiler
