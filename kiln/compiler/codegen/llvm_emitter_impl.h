// The code generator's front half: a LoopIr -> LLVM IR functions, for the host CPU (a range
// function the runtime calls from its OpenMP team) or for NVPTX (one element per thread).
// Both targets share the per-element emission, so they compute the same values in the same
// order as the interpreter (runtime/cpu/loop_kernel_exec.inc): the register type, the op
// order and the libm calls match it, and nothing is contracted into FMAs, so CPU results are
// bit-identical to the interpreter's. Internal: includes LLVM headers.
#pragma once

#include <llvm/IR/Module.h>

#include <string>

#include "kiln/compiler/codegen/llvm_codegen.h"
#include "kiln/compiler/codegen/loop_ir.h"

namespace kiln::codegen {

enum class KernelTarget { kCpu, kNvptx };

/// Adds the unit's functions to `module` (llvm_codegen.h, LoopUnit). kCpu: CpuStageFn and
/// CpuReadFn. kNvptx: one kernel per stage,
/// `void(ptr src0, ..., ptr srcK-1, ptr out0, ..., ptr outR-1, i64 n)`,
/// thread i < n computing element i; math functions are libdevice's (__nv_*), linked in by the
/// caller.
void emit_loop_ir(const LoopUnit& unit, KernelTarget target, llvm::Module& module);
/// Adds the NVPTX reduction kernel `unit` (llvm_codegen.h, GpuKernelUnit) to `module`.
void emit_nvptx_reduction(const GpuKernelUnit& unit, llvm::Module& module);
/// Adds the NVPTX rng_bits kernel `name` (llvm_codegen.h, GpuKernelOp::kRngBits) to `module`.
void emit_nvptx_rng_bits(const std::string& name, llvm::Module& module);

}  // namespace kiln::codegen
