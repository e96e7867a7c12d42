// The GPU's reduction kernels (thread per result, block per result, column tiles; see
// llvm_codegen.h, GpuReduction) and its rng_bits kernel, emitted as LLVM NVPTX with the loop
// stages' loads, registers and stores (stage_emitter_impl.h).
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <iterator>
#include <limits>

#include "kiln/compiler/codegen/llvm_emitter_impl.h"
#include "kiln/compiler/codegen/stage_emitter_impl.h"

namespace kiln::codegen {
namespace {

// The reduction kernels, `void(ptr src, ptr dst, i64 outer, i64 r, i64 inner)` over src viewed
// as [outer, r, inner] (llvm_codegen.h, GpuReduction). Values fold in the register type a loop
// over these dtypes would use (f32, or f64 for f64/i32/i64), loads and the store convert as a
// loop stage does (a one-load stage stands for the input). Partial results combine as
// (value, index) pairs under the reference's rules, whatever order they meet in:
// - sum adds (a tree changes the rounding order, not the accumulation type);
// - max/min: a NaN wins (nan_max, nan_min), so any NaN in the row gives NaN;
// - argmax: the larger value, a NaN over a number (the first NaN beats everything), and on a
//   tie the lower index, so the result is the FIRST maximum as eval_argmax's serial scan finds.
//   The identity (-inf, 0) loses to every element or ties only where every element is -inf,
//   whose first maximum is index 0 anyway.
class ReductionKernel {
 public:
  ReductionKernel(const GpuKernelUnit& unit, llvm::Module& m)
      : unit_(unit), m_(m), c_(m.getContext()), ir_(register_ir(unit)), st_(one_load_stage(unit)),
        f_(llvm::Function::Create(llvm::FunctionType::get(Type::getVoidTy(c_), {ptr(1), ptr(1), i64(), i64(), i64()}, false),
                                  llvm::Function::ExternalLinkage, unit.name, m)),
        b_(llvm::BasicBlock::Create(c_, "entry", f_)), e_(b_, ir_, st_, KernelTarget::kNvptx) {}

  void emit() {
    switch (unit_.layout) {
      case GpuReduction::kThreadPerResult: thread_per_result(); break;
      case GpuReduction::kBlockPerResult: block_per_result(); break;
      case GpuReduction::kColumnTiles: column_tiles(); break;
    }
    b_.CreateRetVoid();
    mark_kernel(f_, m_);
  }

 private:
  struct Partial {
    Value* value;  // register type
    Value* index;  // i64, argmax only (else null)
  };

  static LoopIr register_ir(const GpuKernelUnit& u) {
    LoopIr ir;
    ir.use_double = needs_double_registers(u.input) || needs_double_registers(u.output);
    return ir;
  }
  static LoopStage one_load_stage(const GpuKernelUnit& u) {
    LoopStage st;
    st.shape = Shape(u.output, {1});
    st.loads.push_back({LoopLoad::kParameter, 0, u.input, {1}, true});
    return st;
  }
  Type* ptr(unsigned space) { return llvm::PointerType::get(c_, space); }
  Type* i64() { return Type::getInt64Ty(c_); }
  Type* i32() { return Type::getInt32Ty(c_); }
  bool argmax() const { return unit_.op == GpuKernelOp::kArgmax; }
  Value* src() { return f_->getArg(0); }
  Value* dst() { return f_->getArg(1); }
  Value* outer() { return f_->getArg(2); }
  Value* r() { return f_->getArg(3); }
  Value* inner() { return f_->getArg(4); }
  Value* sreg(llvm::Intrinsic::ID id) { return b_.CreateZExt(b_.CreateIntrinsic(id, {}, {}), i64()); }
  Value* i64c(int64_t v) { return llvm::ConstantInt::get(i64(), static_cast<uint64_t>(v)); }
  llvm::BasicBlock* block(const char* name) { return llvm::BasicBlock::Create(c_, name, f_); }

  Partial identity() {
    const double inf = std::numeric_limits<double>::infinity();
    const GpuKernelOp op = unit_.op;
    return {e_.fconst(op == GpuKernelOp::kSum ? 0.0 : op == GpuKernelOp::kMin ? inf : -inf, 1), argmax() ? i64c(0) : nullptr};
  }

  // a then b, as the reference folds them (see the class comment).
  Partial combine(Partial a, Partial x) {
    if (unit_.op == GpuKernelOp::kSum) return {b_.CreateFAdd(a.value, x.value), nullptr};
    Value* x_nan = b_.CreateFCmpUNO(x.value, x.value);
    if (!argmax()) {
      Value* better = unit_.op == GpuKernelOp::kMax ? b_.CreateFCmpOGT(x.value, a.value) : b_.CreateFCmpOLT(x.value, a.value);
      return {b_.CreateSelect(b_.CreateOr(better, x_nan), x.value, a.value), nullptr};
    }
    Value* a_nan = b_.CreateFCmpUNO(a.value, a.value);
    Value* same = b_.CreateOr(b_.CreateFCmpOEQ(x.value, a.value), b_.CreateAnd(x_nan, a_nan));
    Value* better = b_.CreateOr(b_.CreateOr(b_.CreateFCmpOGT(x.value, a.value), b_.CreateAnd(x_nan, b_.CreateNot(a_nan))),
                                b_.CreateAnd(same, b_.CreateICmpSLT(x.index, a.index)));
    return {b_.CreateSelect(better, x.value, a.value), b_.CreateSelect(better, x.index, a.index)};
  }

  // Registers that loops carry (allocas SROA turns back into registers).
  struct Slot {
    Value* value;
    Value* index;
  };
  Slot slot() {
    IRBuilder<> entry(&f_->getEntryBlock(), f_->getEntryBlock().begin());
    return {entry.CreateAlloca(e_.reg_type()), entry.CreateAlloca(i64())};
  }
  void put(Slot s, Partial p) {
    b_.CreateStore(p.value, s.value);
    if (argmax()) b_.CreateStore(p.index, s.index);
  }
  Partial get(Slot s) {
    return {b_.CreateLoad(e_.reg_type(), s.value), argmax() ? b_.CreateLoad(i64(), s.index) : nullptr};
  }

  // Folds elements base + j * inner for j = first, first + step, ... < r into `acc`.
  void fold_row(Slot acc, Value* base, Value* first, Value* step) {
    emit_loop(b_, first, r(), step, "j", [&](Value* j) {
      Value* x = e_.load_element(src(), 0, b_.CreateAdd(base, b_.CreateMul(j, inner())));
      put(acc, combine(get(acc), {x, argmax() ? j : nullptr}));
    });
  }

  void store_result(Value* at, Partial p) {
    if (argmax()) {  // an i32 index (an empty axis gives 0)
      b_.CreateAlignedStore(b_.CreateTrunc(p.index, i32()), b_.CreateGEP(i32(), dst(), at), llvm::Align(4));
    } else {
      e_.store(dst(), unit_.output, at, p.value, 1);
    }
  }

  // The start of result `res`'s row: [outer, r, inner] element (res / inner, 0, res % inner).
  Value* row_base(Value* res) {
    return b_.CreateAdd(b_.CreateMul(b_.CreateMul(b_.CreateUDiv(res, inner()), r()), inner()), b_.CreateURem(res, inner()));
  }

  // Thread t < outer * inner folds its r elements in order (the reference's order). Consecutive
  // threads read consecutive inner elements, so with inner > 1 the loads coalesce.
  void thread_per_result() {
    Slot acc = slot();
    Value* t = thread_index(b_);
    llvm::BasicBlock *work = block("work"), *exit = block("exit");
    b_.CreateCondBr(b_.CreateICmpSLT(t, b_.CreateMul(outer(), inner())), work, exit);
    b_.SetInsertPoint(work);
    put(acc, identity());
    fold_row(acc, row_base(t), i64c(0), i64c(1));
    store_result(t, get(acc));
    b_.CreateBr(exit);
    b_.SetInsertPoint(exit);
  }

  // Shared memory of `n` registers and indices for this kernel.
  Slot shared(int64_t n) {
    auto var = [&](Type* t, const char* what) {
      auto* array = llvm::ArrayType::get(t, static_cast<uint64_t>(n));
      return new llvm::GlobalVariable(m_, array, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(array),
                                      str_cat(unit_.name, what), nullptr, llvm::GlobalValue::NotThreadLocal, 3);
    };
    return {var(e_.reg_type(), "_values"), argmax() ? var(i64(), "_indices") : nullptr};
  }
  Slot at(Slot array, Value* i) {
    return {b_.CreateGEP(e_.reg_type(), array.value, i), argmax() ? b_.CreateGEP(i64(), array.index, i) : nullptr};
  }
  void barrier() { b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }

  // shfl.sync.down of a 32- or 64-bit value (64: two 32-bit halves).
  Value* shuffle_down(Value* v, unsigned delta) {
    Type* t = v->getType();
    const unsigned bits = t->getPrimitiveSizeInBits().getFixedSize();
    auto shfl = [&](Value* w) {
      return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_down_i32, {},
                                {b_.getInt32(0xffffffffu), w, b_.getInt32(delta), b_.getInt32(0x1f)});
    };
    if (bits == 32) return b_.CreateBitCast(shfl(b_.CreateBitCast(v, i32())), t);
    Value* w = b_.CreateBitCast(v, i64());
    Value* lo = shfl(b_.CreateTrunc(w, i32()));
    Value* hi = shfl(b_.CreateTrunc(b_.CreateLShr(w, 32), i32()));
    return b_.CreateBitCast(b_.CreateOr(b_.CreateZExt(lo, i64()), b_.CreateShl(b_.CreateZExt(hi, i64()), 32)), t);
  }
  // Lane 0 ends with the warp's 32 partials combined (a shuffle tree, lane i + d into lane i).
  Partial warp_reduce(Partial p) {
    for (unsigned d = 16; d >= 1; d /= 2)
      p = combine(p, {shuffle_down(p.value, d), argmax() ? shuffle_down(p.index, d) : nullptr});
    return p;
  }

  // A block of ntid.x threads (a multiple of 32) per result, results ctaid.x, + nctaid.x, ...:
  // thread k folds elements k, k + ntid.x, ... (consecutive threads read consecutive elements
  // when inner is 1), each warp combines with shuffles, and warp 0 combines the warps' results
  // from shared memory.
  void block_per_result() {
    Slot acc = slot();
    const Slot warps_out = shared(32);
    Value* tid = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
    Value* threads = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
    Value* lane = b_.CreateAnd(tid, i64c(31));
    Value* warp = b_.CreateLShr(tid, 5);
    Value* warps = b_.CreateLShr(threads, 5);
    Value* results = b_.CreateMul(outer(), inner());
    emit_loop(b_, sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), results,
              sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), "res", [&](Value* res) {
      put(acc, identity());
      fold_row(acc, row_base(res), tid, threads);
      Partial p = warp_reduce(get(acc));
      llvm::BasicBlock *lane0 = block("lane0"), *joined = block("joined");
      b_.CreateCondBr(b_.CreateICmpEQ(lane, i64c(0)), lane0, joined);
      b_.SetInsertPoint(lane0);
      put(at(warps_out, warp), p);
      b_.CreateBr(joined);
      b_.SetInsertPoint(joined);
      barrier();
      llvm::BasicBlock *warp0 = block("warp0"), *in_range = block("in_range"), *gathered = block("gathered"),
                       *store = block("store"), *next = block("next");
      b_.CreateCondBr(b_.CreateICmpEQ(warp, i64c(0)), warp0, next);
      b_.SetInsertPoint(warp0);
      put(acc, identity());
      b_.CreateCondBr(b_.CreateICmpULT(lane, warps), in_range, gathered);
      b_.SetInsertPoint(in_range);
      put(acc, get(at(warps_out, lane)));
      b_.CreateBr(gathered);
      b_.SetInsertPoint(gathered);
      p = warp_reduce(get(acc));
      b_.CreateCondBr(b_.CreateICmpEQ(lane, i64c(0)), store, next);
      b_.SetInsertPoint(store);
      store_result(res, p);
      b_.CreateBr(next);
      b_.SetInsertPoint(next);
      barrier();  // warp 0 has read the shared partials before the next result writes them
    });
  }

  // Blocks of 32 x ntid.y threads, one per (outer row, tile of 32 consecutive inner elements),
  // block ctaid.x = o * tiles + tile: thread (x, y) folds column tile * 32 + x over rows
  // y, y + ntid.y, ... (a warp reads 32 consecutive elements: coalesced), then thread (x, 0)
  // combines the ntid.y partials of its column from shared memory in order of y.
  void column_tiles() {
    Slot acc = slot();
    const Slot tile_out = shared(32 * 32);
    Value* x = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
    Value* y = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y);
    Value* rows = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_y);
    Value* tiles = b_.CreateUDiv(b_.CreateAdd(inner(), i64c(31)), i64c(32));
    Value* blk = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    Value* o = b_.CreateUDiv(blk, tiles);
    Value* column = b_.CreateAdd(b_.CreateMul(b_.CreateURem(blk, tiles), i64c(32)), x);
    Value* valid = b_.CreateICmpULT(column, inner());
    put(acc, identity());
    llvm::BasicBlock *fold = block("fold"), *folded = block("folded");
    b_.CreateCondBr(valid, fold, folded);
    b_.SetInsertPoint(fold);
    fold_row(acc, b_.CreateAdd(b_.CreateMul(b_.CreateMul(o, r()), inner()), column), y, rows);
    b_.CreateBr(folded);
    b_.SetInsertPoint(folded);
    put(at(tile_out, b_.CreateAdd(b_.CreateMul(y, i64c(32)), x)), get(acc));
    barrier();
    llvm::BasicBlock *first_row = block("first_row"), *exit = block("exit");
    b_.CreateCondBr(b_.CreateAnd(valid, b_.CreateICmpEQ(y, i64c(0))), first_row, exit);
    b_.SetInsertPoint(first_row);
    emit_loop(b_, i64c(1), rows, i64c(1), "k", [&](Value* k) {
      put(acc, combine(get(acc), get(at(tile_out, b_.CreateAdd(b_.CreateMul(k, i64c(32)), x)))));
    });
    store_result(b_.CreateAdd(b_.CreateMul(o, inner()), column), get(acc));
    b_.CreateBr(exit);
    b_.SetInsertPoint(exit);
  }

  const GpuKernelUnit& unit_;
  llvm::Module& m_;
  llvm::LLVMContext& c_;
  LoopIr ir_;
  LoopStage st_;
  llvm::Function* f_;
  IRBuilder<> b_;
  StageEmitter e_;
};


}  // namespace

void emit_nvptx_reduction(const GpuKernelUnit& unit, llvm::Module& m) { ReductionKernel(unit, m).emit(); }

// Thread i < n: Philox-4x32-10 of counter {lo(i), hi(i), 0, 0} and key {lo(key), hi(key)},
// word 0 (kiln/core/rng.h's philox_element_bits, which the CPU and the reference call).
void emit_nvptx_rng_bits(const std::string& name, llvm::Module& m) {
  llvm::LLVMContext& c = m.getContext();
  Type* ptr = llvm::PointerType::get(c, 1);
  Type* i32 = Type::getInt32Ty(c);
  Type* i64 = Type::getInt64Ty(c);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(Type::getVoidTy(c), {ptr, ptr, i64}, false),
                                   llvm::Function::ExternalLinkage, name, m);
  IRBuilder<> b(llvm::BasicBlock::Create(c, "entry", f));
  Value* i = thread_index(b);
  auto* work = llvm::BasicBlock::Create(c, "work", f);
  auto* exit = llvm::BasicBlock::Create(c, "exit", f);
  b.CreateCondBr(b.CreateICmpSLT(i, f->getArg(2)), work, exit);
  b.SetInsertPoint(work);
  Value* key = b.CreateAlignedLoad(i64, f->getArg(0), llvm::Align(8));
  auto lo = [&](Value* v) { return b.CreateTrunc(v, i32); };
  auto hi = [&](Value* v) { return b.CreateTrunc(b.CreateLShr(v, 32), i32); };
  auto k32 = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  Value* ctr[4] = {lo(i), hi(i), k32(0), k32(0)};
  Value* k[2] = {lo(key), hi(key)};
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] = b.CreateAdd(k[0], k32(0x9E3779B9u));
      k[1] = b.CreateAdd(k[1], k32(0xBB67AE85u));
    }
    Value* p0 = b.CreateMul(llvm::ConstantInt::get(i64, 0xD2511F53u), b.CreateZExt(ctr[0], i64));
    Value* p1 = b.CreateMul(llvm::ConstantInt::get(i64, 0xCD9E8D57u), b.CreateZExt(ctr[2], i64));
    Value* next[4] = {b.CreateXor(b.CreateXor(hi(p1), ctr[1]), k[0]), lo(p1),
                      b.CreateXor(b.CreateXor(hi(p0), ctr[3]), k[1]), lo(p0)};
    std::copy(std::begin(next), std::end(next), std::begin(ctr));
  }
  b.CreateAlignedStore(ctr[0], b.CreateGEP(i32, f->getArg(1), i), llvm::Align(4));
  b.CreateBr(exit);
  b.SetInsertPoint(exit);
  b.CreateRetVoid();
  mark_kernel(f, m);
}


}  // namespace kiln::codegen
