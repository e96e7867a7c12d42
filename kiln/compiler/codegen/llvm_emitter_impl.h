// The code generator's front half: a LoopIr -> LLVM IR functions, for the host CPU (a range
// function the runtime calls from its OpenMP team) or for NVPTX (one element per thread).
// Both targets share the per-element emission, so they compute the same values in the same
// order as the interpreter (runtime/cpu/loop_kernel_exec.inc): the register type, the op
// order and the libm calls match it, and nothing is contracted into FMAs, so CPU results are
// bit-identical to the interpreter's. Internal: includes LLVM headers.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <string>

#include "kiln/compiler/codegen/gpu_index_kernels.h"
#include "kiln/compiler/codegen/llvm_codegen.h"
#include "kiln/compiler/codegen/loop_ir.h"
#include "kiln/core/str_cat.h"

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
/// Adds the index kernel `unit` (gpu_index_kernels.h) to `module`: kNvptx, the GPU kernel;
/// kCpu, its host variant (CpuIndexFn) for tests.
void emit_index_kernel(const IndexKernelUnit& unit, KernelTarget target, llvm::Module& module);
/// Adds the NVPTX rng_bits kernel `name` (llvm_codegen.h, GpuKernelOp::kRngBits) to `module`.
void emit_nvptx_rng_bits(const std::string& name, llvm::Module& module);


/// The element index a GPU thread computes: ctaid.x * ntid.x + tid.x (i64).
llvm::Value* thread_index(llvm::IRBuilder<>& b);
/// Marks `f` a kernel entry (nvvm.annotations).
void mark_kernel(llvm::Function* f, llvm::Module& m);

/// `for (j = from; j < to; j += step) body(j)` at the builder's position; leaves the builder
/// after the loop.
template <typename Body>
void emit_loop(llvm::IRBuilder<>& b, llvm::Value* from, llvm::Value* to, llvm::Value* step, const char* name, Body body) {
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& c = b.getContext();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(c, str_cat(name, ".head"), f);
  auto* loop = llvm::BasicBlock::Create(c, str_cat(name, ".body"), f);
  auto* done = llvm::BasicBlock::Create(c, str_cat(name, ".done"), f);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* j = b.CreatePHI(from->getType(), 2, name);
  j->addIncoming(from, pre);
  b.CreateCondBr(b.CreateICmpSLT(j, to), loop, done);
  b.SetInsertPoint(loop);
  body(j);
  j->addIncoming(b.CreateAdd(j, step), b.GetInsertBlock());
  b.CreateBr(head);
  b.SetInsertPoint(done);
}
template <typename Body>
void emit_loop(llvm::IRBuilder<>& b, llvm::Value* from, llvm::Value* to, int64_t step, const char* name, Body body) {
  emit_loop(b, from, to, llvm::ConstantInt::get(from->getType(), static_cast<uint64_t>(step)), name, body);
}

}  // namespace kiln::codegen
