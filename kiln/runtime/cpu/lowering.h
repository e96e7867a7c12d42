// Lowering: turns each planned entry instruction into a Step with the best CPU kernel for it
// (oneDNN matmul with epilogues, fused loop and reduction kernels, ...), through one handler
// per op (cpu_lowerer_impl.h), falling back to the reference evaluator where a kernel does not
// take an op (reference_fallbacks.h lists the ops and dtypes), so every op runs.
#pragma once

#include "kiln/runtime/cpu/control_flow_steps.h"
#include "kiln/runtime/cpu/cpu_executable.h"
#include "kiln/runtime/cpu/loop_kernel.h"
#include "kiln/runtime/cpu/onednn_matmul.h"

namespace kiln::cpu {

/// Appends one Step per instruction of `exe.plan().order` that needs a kernel; fused loops
/// and reduction producers run on `engine`. With `horizontal_fusion` (the default; off with
/// KILN_DISABLE_PASSES=horizontal-fusion) consecutive loop fusions over one index space share
/// a kernel (loop_grouping.h). `matmul` says how bf16/f16 matmuls choose their path.
/// `compile_nested` compiles while bodies and conditions and conditional branches; without
/// it a module holding one is a CompileError.
void lower(CpuExecutable& exe, LoopEngine engine, bool horizontal_fusion = true, const MatmulOptions& matmul = {},
           const CompileNested& compile_nested = {});

}  // namespace kiln::cpu
