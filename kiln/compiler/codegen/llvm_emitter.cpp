// LoopIr -> LLVM IR functions (the stage emitter is stage_emitter_impl.h; the GPU reduction
// and rng_bits kernels are gpu_reduction_kernels.cpp). A CPU stage function walks its range row by row over the stage's shape
// after merging dims that every load walks alike (so an elementwise body is one row); each row
// runs a W-lane vector loop (explicit vectors, so no alias analysis is needed: an output may
// be an input's buffer, as the memory planner allows) and a scalar tail. Loads whose inner
// stride is 0 are read once per row; other strides gather.
#include "kiln/compiler/codegen/llvm_emitter_impl.h"

#include <llvm/IR/IRBuilder.h>

#include <vector>

#include "kiln/compiler/codegen/stage_emitter_impl.h"
#include "kiln/core/check.h"
#include "kiln/core/str_cat.h"

namespace kiln::codegen {
namespace {

// Lanes per vector iteration: 64 bytes of registers (one AVX-512 vector, two AVX2 ones).
int cpu_lanes(const LoopIr& ir) { return ir.use_double ? 8 : 16; }

// One CPU function: the stage's elements [begin, end), result k stored at outs[k][i], or the
// first result as registers at out[i - begin] when `read`. All of a vector's loads come before
// its stores, so an output may be an input's buffer when both walk the same elements.
void emit_cpu_function(const LoopIr& ir, const LoopStage& st, const std::string& name, bool read, llvm::Module& m) {
  llvm::LLVMContext& c = m.getContext();
  Type* ptr = llvm::PointerType::get(c, 0);
  Type* i64 = Type::getInt64Ty(c);
  auto* fty = llvm::FunctionType::get(Type::getVoidTy(c), {ptr, ptr, i64, i64}, false);
  auto* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m);
  f->setDoesNotThrow();
  f->addFnAttr(llvm::Attribute::NoUnwind);
  Value* srcs_arg = f->getArg(0);
  Value* begin = f->getArg(2);
  Value* end = f->getArg(3);
  IRBuilder<> b(llvm::BasicBlock::Create(c, "entry", f));
  StageEmitter e(b, ir, st, KernelTarget::kCpu);
  std::vector<Value*> srcs;
  for (size_t k = 0; k < st.loads.size(); ++k)
    srcs.push_back(b.CreateAlignedLoad(ptr, b.CreateConstGEP1_64(ptr, srcs_arg, k), llvm::Align(8)));
  std::vector<Value*> outs;
  if (read) outs.push_back(f->getArg(1));
  else
    for (size_t k = 0; k < st.results.size(); ++k)
      outs.push_back(b.CreateAlignedLoad(ptr, b.CreateConstGEP1_64(ptr, f->getArg(1), k), llvm::Align(8)));
  const int w = cpu_lanes(ir);
  const int64_t inner = e.space().dims.back();
  auto konst = [&](int64_t v) { return llvm::ConstantInt::get(i64, static_cast<uint64_t>(v)); };

  auto store = [&](Value* index, const std::vector<Value*>& v, int lanes) {
    if (read) e.store_register(outs[0], b.CreateSub(index, begin), v[0]);
    else
      for (size_t k = 0; k < v.size(); ++k) e.store(outs[k], st.results[k].dtype, index, v[k], lanes);
  };
  if (inner < w && e.space().dims.size() > 1) {
    // Rows shorter than a vector: vectors over the flat index, across rows; a scalar tail.
    Value* vec_end = b.CreateAdd(begin, b.CreateAnd(b.CreateSub(end, begin), konst(~int64_t{w - 1})));
    const auto zero = konst(0);
    emit_loop(b, begin, vec_end, w, "fv", [&](Value* i) {
      StageEmitter::Row r = e.begin_flat(i, w);
      store(i, e.values(srcs, r, i, zero, w), w);
    });
    emit_loop(b, vec_end, end, 1, "fs", [&](Value* i) {
      StageEmitter::Row r = e.begin_flat(i, 1);
      store(i, e.values(srcs, r, i, zero, 1), 1);
    });
    b.CreateRetVoid();
    return;
  }
  // Rows: i walks [begin, end) a row segment at a time.
  llvm::BasicBlock* entry = b.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(c, "row.head", f);
  auto* body = llvm::BasicBlock::Create(c, "row.body", f);
  auto* exit = llvm::BasicBlock::Create(c, "exit", f);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* i = b.CreatePHI(i64, 2, "i");
  i->addIncoming(begin, entry);
  b.CreateCondBr(b.CreateICmpSLT(i, end), body, exit);
  b.SetInsertPoint(body);
  Value* row = b.CreateUDiv(i, konst(inner));
  Value* j0 = b.CreateURem(i, konst(inner));
  Value* row_flat = b.CreateSub(i, j0);
  Value* j_end = b.CreateAdd(j0, b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b.CreateSub(konst(inner), j0),
                                                           b.CreateSub(end, i)));
  StageEmitter::Row r = e.begin_row(srcs, row);
  // Vector part: whole W-lane groups from j0; then the scalar tail.
  Value* vec_end = b.CreateAdd(j0, b.CreateAnd(b.CreateSub(j_end, j0), konst(~int64_t{w - 1})));
  emit_loop(b, j0, vec_end, w, "v", [&](Value* j) { store(b.CreateAdd(row_flat, j), e.values(srcs, r, row_flat, j, w), w); });
  emit_loop(b, vec_end, j_end, 1, "s", [&](Value* j) { store(b.CreateAdd(row_flat, j), e.values(srcs, r, row_flat, j, 1), 1); });
  i->addIncoming(b.CreateAdd(row_flat, j_end), b.GetInsertBlock());
  b.CreateBr(head);
  b.SetInsertPoint(exit);
  b.CreateRetVoid();
}

// One NVPTX kernel per stage: thread i < n computes element i. Loads are kernel parameters.
void emit_nvptx_kernel(const LoopIr& ir, const LoopStage& st, const std::string& name, llvm::Module& m) {
  llvm::LLVMContext& c = m.getContext();
  Type* ptr = llvm::PointerType::get(c, 1);  // global address space
  Type* i64 = Type::getInt64Ty(c);
  std::vector<Type*> params(st.loads.size() + st.results.size(), ptr);
  params.push_back(i64);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(Type::getVoidTy(c), params, false),
                                   llvm::Function::ExternalLinkage, name, m);
  IRBuilder<> b(llvm::BasicBlock::Create(c, "entry", f));
  StageEmitter e(b, ir, st, KernelTarget::kNvptx);
  std::vector<Value*> srcs;
  for (size_t k = 0; k < st.loads.size(); ++k) srcs.push_back(f->getArg(static_cast<unsigned>(k)));
  Value* n = f->getArg(static_cast<unsigned>(st.loads.size() + st.results.size()));
  Value* i = thread_index(b);
  auto* work = llvm::BasicBlock::Create(c, "work", f);
  auto* exit = llvm::BasicBlock::Create(c, "exit", f);
  b.CreateCondBr(b.CreateICmpSLT(i, n), work, exit);
  b.SetInsertPoint(work);
  const int64_t inner = e.space().dims.back();
  Value* j = b.CreateURem(i, llvm::ConstantInt::get(i64, static_cast<uint64_t>(inner)));
  Value* row = b.CreateUDiv(i, llvm::ConstantInt::get(i64, static_cast<uint64_t>(inner)));
  StageEmitter::Row r = e.begin_row(srcs, row);
  std::vector<Value*> v = e.values(srcs, r, b.CreateSub(i, j), j, 1);
  for (size_t k = 0; k < v.size(); ++k)
    e.store(f->getArg(static_cast<unsigned>(st.loads.size() + k)), st.results[k].dtype, i, v[k], 1);
  b.CreateBr(exit);
  b.SetInsertPoint(exit);
  b.CreateRetVoid();
  mark_kernel(f, m);
}

}  // namespace

// The element index a GPU thread computes: ctaid.x * ntid.x + tid.x.
Value* thread_index(IRBuilder<>& b) {
  auto sreg = [&](llvm::Intrinsic::ID id) { return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), b.getInt64Ty()); };
  return b.CreateAdd(b.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x)),
                     sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x));
}

void mark_kernel(llvm::Function* f, llvm::Module& m) {  // nvvm.annotations
  llvm::LLVMContext& c = m.getContext();
  llvm::Metadata* md[] = {llvm::ValueAsMetadata::get(f), llvm::MDString::get(c, "kernel"),
                          llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(Type::getInt32Ty(c), 1))};
  m.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(c, md));
}


std::string stage_symbol(const std::string& prefix, size_t stage) { return str_cat(prefix, "_s", stage); }
std::string read_symbol(const std::string& prefix) { return str_cat(prefix, "_read"); }

void emit_loop_ir(const LoopUnit& unit, KernelTarget target, llvm::Module& module) {
  const LoopIr& ir = *unit.ir;
  const size_t stores = unit.read ? ir.stages.size() - 1 : ir.stages.size();
  for (size_t s = 0; s < stores; ++s) {
    if (target == KernelTarget::kCpu) emit_cpu_function(ir, ir.stages[s], stage_symbol(unit.prefix, s), false, module);
    else emit_nvptx_kernel(ir, ir.stages[s], stage_symbol(unit.prefix, s), module);
  }
  KILN_CHECK(!unit.read || target == KernelTarget::kCpu, "read functions are CPU-only");
  if (unit.read) emit_cpu_function(ir, ir.stages.back(), read_symbol(unit.prefix), true, module);
}

}  // namespace kiln::codegen
