// StageEmitter: one LoopStage's per-element LLVM IR (loads, the register program, stores),
// over a collapsed index space (Space); the ops' math is the elementwise table's and the
// register ops', over IrValueArith (ir_value_arith_impl.h). Shared by the loop kernels (llvm_emitter.cpp) and the GPU reduction kernels
// (gpu_reduction_kernels.cpp), so both load, compute and store exactly as a loop stage does.
// Internal: includes LLVM headers.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <vector>

#include "kiln/compiler/codegen/ir_value_arith_impl.h"
#include "kiln/compiler/codegen/llvm_emitter_impl.h"
#include "kiln/core/check.h"
#include "kiln/core/str_cat.h"

namespace kiln::codegen {

using llvm::IRBuilder;
using llvm::Type;
using llvm::Value;

// A stage's index space after dropping size-1 dims and merging dims that every load (and the
// output) walks contiguously together.
struct Space {
  Dims dims;                 // collapsed; at least one
  std::vector<Dims> strides; // per load, per collapsed dim
};

inline Space collapse(const LoopStage& st) {
  Space s;
  const Dims& d = st.shape.dims();
  s.strides.resize(st.loads.size());
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] == 1) continue;
    bool merge = !s.dims.empty();
    for (size_t k = 0; k < st.loads.size() && merge; ++k)
      merge = s.strides[k].back() == st.loads[k].strides[i] * d[i];
    if (merge) {
      s.dims.back() *= d[i];
      for (size_t k = 0; k < st.loads.size(); ++k) s.strides[k].back() = st.loads[k].strides[i];
    } else {
      s.dims.push_back(d[i]);
      for (size_t k = 0; k < st.loads.size(); ++k) s.strides[k].push_back(st.loads[k].strides[i]);
    }
  }
  if (s.dims.empty()) {
    s.dims.push_back(1);
    for (auto& v : s.strides) v.push_back(0);
  }
  return s;
}

class StageEmitter {
 public:
  StageEmitter(IRBuilder<>& b, const LoopIr& ir, const LoopStage& st, KernelTarget target)
      : b_(b), st_(st), target_(target), space_(collapse(st)) {
    llvm::LLVMContext& c = b.getContext();
    reg_ = ir.use_double ? Type::getDoubleTy(c) : Type::getFloatTy(c);
    i64_ = Type::getInt64Ty(c);
  }

  const Space& space() const { return space_; }
  Type* reg_type() const { return reg_; }

  // Element type of `dt` in memory.
  Type* mem_type(DType dt) const {
    llvm::LLVMContext& c = b_.getContext();
    switch (dt) {
      case DType::kF32: return Type::getFloatTy(c);
      case DType::kF64: return Type::getDoubleTy(c);
      case DType::kBF16: return Type::getInt16Ty(c);
      case DType::kF16: return Type::getHalfTy(c);
      case DType::kI32: return Type::getInt32Ty(c);
      case DType::kI64: return Type::getInt64Ty(c);
      case DType::kU8: case DType::kBool: return Type::getInt8Ty(c);
      case DType::kString: break;  // refused by Computation::add
    }
    KILN_CHECK(false, "unknown dtype");
    return nullptr;
  }

  Type* vec(Type* t, int w) const { return w == 1 ? t : llvm::FixedVectorType::get(t, static_cast<unsigned>(w)); }
  Value* splat(Value* v, int w) { return w == 1 ? v : b_.CreateVectorSplat(static_cast<unsigned>(w), v); }
  Value* fconst(double v, int w) { return llvm::ConstantFP::get(vec(reg_, w), v); }
  Value* iconst(int64_t v) { return llvm::ConstantInt::get(i64_, static_cast<uint64_t>(v)); }

  // Row-invariant state for one row of the collapsed space: where each load's row starts
  // (elements, offset included) and the values of loads that do not move along the row.
  struct Row {
    std::vector<Value*> base;      // per load, i64 (flat: the lanes' element indices)
    std::vector<Value*> invariant; // per load: the register-type scalar, or null
    bool flat = false;             // lanes walk the flat index across rows (short rows)
    std::vector<bool> contiguous;  // flat: the load walks the flat index itself
  };

  // Flat mode, for rows shorter than a vector: lane l is element `first + l`; every load's
  // index comes from the lanes' multi-indices (constant divisions), so a vector spans rows.
  Row begin_flat(Value* first, int w) {
    Row r;
    r.flat = true;
    const size_t rank = space_.dims.size();
    Value* lanes = splat(first, w);
    if (w > 1) {
      std::vector<llvm::Constant*> steps;
      for (int l = 0; l < w; ++l) steps.push_back(llvm::ConstantInt::get(i64_, static_cast<uint64_t>(l)));
      lanes = b_.CreateAdd(lanes, llvm::ConstantVector::get(steps));
    }
    auto vconst = [&](int64_t v) { return llvm::ConstantInt::get(vec(i64_, w), static_cast<uint64_t>(v)); };
    std::vector<Value*> idx(rank);
    Value* rem = lanes;
    for (size_t d = rank; d-- > 0;) {
      idx[d] = d == 0 ? rem : b_.CreateURem(rem, vconst(space_.dims[d]));
      if (d > 0) rem = b_.CreateUDiv(rem, vconst(space_.dims[d]));
    }
    for (size_t k = 0; k < st_.loads.size(); ++k) {
      Dims contiguous(rank, 0);
      for (size_t d = rank, step = 1; d-- > 0;) {
        contiguous[d] = static_cast<int64_t>(step);
        step *= static_cast<size_t>(space_.dims[d]);
      }
      r.contiguous.push_back(space_.strides[k] == contiguous);
      Value* base = r.contiguous.back() ? b_.CreateAdd(first, iconst(st_.loads[k].offset)) : vconst(st_.loads[k].offset);
      if (!r.contiguous.back())
        for (size_t d = 0; d < rank; ++d)
          if (space_.strides[k][d] != 0) base = b_.CreateAdd(base, b_.CreateMul(idx[d], vconst(space_.strides[k][d])));
      r.base.push_back(base);
      r.invariant.push_back(nullptr);
    }
    return r;
  }

  Row begin_row(const std::vector<Value*>& srcs, Value* row) {
    Row r;
    const size_t outer = space_.dims.size() - 1;
    std::vector<Value*> idx(outer);
    Value* rem = row;
    for (size_t d = outer; d-- > 0;) {  // row -> multi-index over the outer dims
      idx[d] = d == 0 ? rem : b_.CreateURem(rem, iconst(space_.dims[d]));
      if (d > 0) rem = b_.CreateUDiv(rem, iconst(space_.dims[d]));
    }
    for (size_t k = 0; k < st_.loads.size(); ++k) {
      Value* base = iconst(st_.loads[k].offset);
      for (size_t d = 0; d < outer; ++d)
        if (space_.strides[k][d] != 0) base = b_.CreateAdd(base, b_.CreateMul(idx[d], iconst(space_.strides[k][d])));
      r.base.push_back(base);
      r.invariant.push_back(inner_stride(k) == 0 ? load_scalar(srcs[k], k, base) : nullptr);
    }
    return r;
  }

  // The stage's results for `w` lanes at inner positions j, j+1, ... of the row whose first
  // element has flat index `row_flat`.
  std::vector<Value*> values(const std::vector<Value*>& srcs, const Row& row, Value* row_flat, Value* j, int w) {
    std::vector<Value*> regs(static_cast<size_t>(st_.num_registers), nullptr);
    for (const LoopInstr& in : st_.code) {
      Value* a = regs[static_cast<size_t>(in.a)];
      Value* bv = in.b_is_scalar ? fconst(in.value, w) : regs[static_cast<size_t>(in.b)];
      Value* c = regs[static_cast<size_t>(in.c)];
      regs[static_cast<size_t>(in.dst)] = op(in, srcs, row, row_flat, j, w, a, bv, c);
    }
    std::vector<Value*> results;
    for (const LoopResult& r : st_.results) results.push_back(regs[static_cast<size_t>(r.reg)]);
    return results;
  }

  // Converts register values to `dt` and stores them at element `index` of `out`.
  void store(Value* out, DType dt, Value* index, Value* v, int w) { store_as(out, dt, index, v, w); }
  // Load k's element `index` of `src`, in the register type (a scalar).
  Value* load_element(Value* src, size_t k, Value* index) { return load_scalar(src, k, index); }
  // Stores register values unconverted (the read function).
  void store_register(Value* out, Value* index, Value* v) {
    b_.CreateAlignedStore(v, b_.CreateGEP(reg_, out, index), llvm::Align(reg_->getScalarSizeInBits() / 8));
  }

 private:
  int64_t inner_stride(size_t k) const { return space_.strides[k].back(); }

  Value* load_scalar(Value* src, size_t k, Value* index) {
    const DType dt = st_.loads[k].dtype;
    Type* mt = mem_type(dt);
    Value* raw = b_.CreateAlignedLoad(mt, b_.CreateGEP(mt, src, index), llvm::Align(size_of(dt)));
    return to_register(raw, dt);
  }

  Value* load(const std::vector<Value*>& srcs, const Row& row, size_t k, Value* j, int w) {
    if (row.invariant[k] != nullptr) return splat(row.invariant[k], w);
    const DType dt = st_.loads[k].dtype;
    Type* mt = mem_type(dt);
    if (row.flat) {  // base: the first lane's index (contiguous) or every lane's
      if (w == 1) return load_scalar(srcs[k], k, row.base[k]);
      Value* at = b_.CreateGEP(mt, srcs[k], row.base[k]);
      Value* raw = row.contiguous[k] ? static_cast<Value*>(b_.CreateAlignedLoad(vec(mt, w), at, llvm::Align(size_of(dt))))
                                     : b_.CreateMaskedGather(vec(mt, w), at, llvm::Align(size_of(dt)));
      return to_register(raw, dt);
    }
    const int64_t s = inner_stride(k);
    Value* first = b_.CreateAdd(row.base[k], s == 1 ? j : b_.CreateMul(j, iconst(s)));
    if (w == 1) return load_scalar(srcs[k], k, first);
    Value* raw;
    if (s == 1) {
      raw = b_.CreateAlignedLoad(vec(mt, w), b_.CreateGEP(mt, srcs[k], first), llvm::Align(size_of(dt)));
    } else {
      std::vector<llvm::Constant*> steps;
      for (int l = 0; l < w; ++l) steps.push_back(llvm::ConstantInt::get(i64_, static_cast<uint64_t>(l * s)));
      Value* idx = b_.CreateAdd(splat(first, w), llvm::ConstantVector::get(steps));
      raw = b_.CreateMaskedGather(vec(mt, w), b_.CreateGEP(mt, srcs[k], idx), llvm::Align(size_of(dt)));
    }
    return to_register(raw, dt);
  }

  // The arithmetic over `w` lanes of registers (ir_value_arith_impl.h).
  IrValueArith arith(int w) { return IrValueArith{b_, reg_, w, target_}; }
  Type* int_vec(unsigned bits, int w) { return vec(Type::getIntNTy(b_.getContext(), bits), w); }

  Value* to_register(Value* raw, DType dt) {
    const int w = width_of(raw);
    Type* r = vec(reg_, w);
    IrValueArith m = arith(w);
    switch (dt) {
      case DType::kF32: case DType::kF64: return b_.CreateFPCast(raw, r);
      case DType::kBF16: return m.from_float(m.bf16_to_float(raw));
      case DType::kF16: return b_.CreateFPExt(raw, r);
      case DType::kI32: case DType::kI64: return b_.CreateSIToFP(raw, r);
      case DType::kU8: return b_.CreateUIToFP(raw, r);
      case DType::kBool: return b_.CreateUIToFP(b_.CreateICmpNE(raw, llvm::Constant::getNullValue(raw->getType())), r);
      case DType::kString: break;  // refused by Computation::add
    }
    return nullptr;
  }

  void store_as(Value* out, DType dt, Value* index, Value* v, int w) {
    llvm::LLVMContext& c = b_.getContext();
    IrValueArith a = arith(w);
    Value* m = nullptr;
    switch (dt) {
      case DType::kF32: case DType::kF64: m = b_.CreateFPCast(v, vec(mem_type(dt), w)); break;
      case DType::kBF16: m = a.bf16_bits(a.as_float(v)); break;
      case DType::kF16: m = b_.CreateFPTrunc(a.as_float(v), vec(Type::getHalfTy(c), w)); break;
      case DType::kI32: case DType::kI64: m = b_.CreateFPToSI(v, vec(mem_type(dt), w)); break;
      // As GCC converts to uint8_t: through int32, then the low byte.
      case DType::kU8: m = b_.CreateTrunc(b_.CreateFPToSI(v, int_vec(32, w)), int_vec(8, w)); break;
      case DType::kBool: m = b_.CreateZExt(b_.CreateFCmpUNE(v, fconst(0, w)), int_vec(8, w)); break;
      case DType::kString: KILN_CHECK(false, "a string value in a loop kernel"); break;
    }
    b_.CreateAlignedStore(m, b_.CreateGEP(mem_type(dt), out, index), llvm::Align(size_of(dt)));
  }

  Value* op(const LoopInstr& in, const std::vector<Value*>& srcs, const Row& row, Value* row_flat, Value* j, int w,
            Value* a, Value* bv, Value* c) {
    IrValueArith m = arith(w);
    switch (in.op) {
      case LoopOp::kLoad: return load(srcs, row, static_cast<size_t>(in.load), j, w);
      case LoopOp::kSplat: return fconst(in.value, w);
      case LoopOp::kIota: {
        Value* flat = splat(b_.CreateAdd(row_flat, j), w);
        if (w > 1) {
          std::vector<llvm::Constant*> lanes;
          for (int l = 0; l < w; ++l) lanes.push_back(llvm::ConstantInt::get(i64_, static_cast<uint64_t>(l)));
          flat = b_.CreateAdd(flat, llvm::ConstantVector::get(lanes));
        }
        Value* q = b_.CreateURem(b_.CreateUDiv(flat, llvm::ConstantInt::get(vec(i64_, w), static_cast<uint64_t>(in.div))),
                                 llvm::ConstantInt::get(vec(i64_, w), static_cast<uint64_t>(in.mod)));
        return b_.CreateSIToFP(q, vec(reg_, w));
      }
      // The elementwise table's rows and the register ops: their math over IR values.
#define KILN_UNARY(N, ...) case LoopOp::k##N: return ir::elementwise::N::apply(m, a);
#define KILN_BINARY(N, ...) case LoopOp::k##N: return ir::elementwise::N::apply(m, a, bv);
#include "kiln/ir/elementwise.def"
#undef KILN_UNARY
#undef KILN_BINARY
#define KILN_REGISTER_OP_CASE(N, ...) case LoopOp::k##N: return register_ops::N::apply(m, a, bv, c);
      KILN_REGISTER_OPS(KILN_REGISTER_OP_CASE)
#undef KILN_REGISTER_OP_CASE
    }
    KILN_CHECK(false, "unknown loop op");
    return nullptr;
  }

  IRBuilder<>& b_;
  const LoopStage& st_;
  KernelTarget target_;
  Space space_;
  Type* reg_;
  Type* i64_;
};

}  // namespace kiln::codegen
