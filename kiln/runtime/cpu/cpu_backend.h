// The CPU backend: oneDNN for contractions, Kiln's fused loop and reduction kernels for the
// rest, one OpenMP runtime for both (oneDNN's Debian build uses OpenMP, so threads never
// oversubscribe).
#pragma once

#include <memory>
#include <optional>

#include "kiln/runtime/backend.h"

namespace kiln::cpu {

/// How fused loops run (loop_kernel.h): generated code or the interpreter.
enum class LoopEngine;

/// A CPU backend. `memory_limit` of 0 means DebugOptions (KILN_CPU_MEMORY_LIMIT) or, if that
/// is unset too, physical RAM. `engine` unset means DebugOptions (KILN_CODEGEN).
/// `horizontal_fusion`: consecutive loop kernels over one index space share a kernel
/// (lowering.h); KILN_DISABLE_PASSES=horizontal-fusion also turns it off.
std::unique_ptr<runtime::Backend> make_cpu_backend(int64_t memory_limit = 0,
                                                   std::optional<LoopEngine> engine = std::nullopt,
                                                   bool horizontal_fusion = true);

}  // namespace kiln::cpu
