// Lowering: turns each planned entry instruction into a Step with the best CPU kernel for it
// (oneDNN matmul with epilogues, fused loop and reduction kernels, ...), through one handler
// per op (cpu_lowerer_impl.h), falling back to the reference evaluator where no kernel takes an
// op and reference_fallbacks.h lists it.
#pragma once

#include "kiln/runtime/cpu/control_flow_steps.h"
#include "kiln/runtime/cpu/cpu_executable.h"
#include "kiln/runtime/cpu/loop_kernel.h"
#include "kiln/runtime/cpu/onednn_matmul.h"

namespace kiln::cpu {

/// How lower() runs each op.
struct LoweringOptions {
  /// What fused loops and reduction producers run on.
  LoopEngine engine = LoopEngine::kGenerated;
  /// Consecutive loop fusions over one index space share a kernel (loop_grouping.h); off with
  /// KILN_DISABLE_PASSES=horizontal-fusion.
  bool horizontal_fusion = true;
  /// How bf16/f16 matmuls and convolutions choose their path.
  MatmulOptions matmul;
  /// Runs an op no kernel takes and reference_fallbacks.h does not list on the reference
  /// evaluator with a warning (KILN_UNLISTED_FALLBACKS=1) instead of refusing it.
  bool unlisted_fallbacks = false;
};

/// Appends one Step per instruction of `exe.plan().order` that needs a kernel. An op no kernel
/// takes runs on the reference evaluator where reference_fallbacks.h lists it, and is a
/// CompileError naming it otherwise (unless `options.unlisted_fallbacks`). `compile_nested`
/// compiles while bodies and conditions and conditional branches; without it a module holding
/// one is a CompileError.
void lower(CpuExecutable& exe, const LoweringOptions& options, const CompileNested& compile_nested = {});

}  // namespace kiln::cpu
