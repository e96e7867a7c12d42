// StageEmitter: one LoopStage's per-element LLVM IR (loads, the register program, stores),
// over a collapsed index space (Space), and IrArith, core/float_math.h's recipes over IR
// values. Shared by the loop kernels (llvm_emitter.cpp) and the GPU reduction kernels
// (gpu_reduction_kernels.cpp), so both load, compute and store exactly as a loop stage does.
// Internal: includes LLVM headers.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <vector>

#include "kiln/compiler/codegen/llvm_emitter_impl.h"
#include "kiln/core/check.h"
#include "kiln/core/float_math.h"
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

// core/float_math.h's arithmetic over IR values of `w` f64 lanes: each call is the one IEEE
// operation the scalar arithmetic does, so generated code matches the interpreter bit for bit.
struct IrArith {
  using D = Value*;
  using I = Value*;
  using B = Value*;
  IRBuilder<>& b;
  Type* d;  // <w x double>
  Type* i;  // <w x i64>

  IrArith(IRBuilder<>& builder, int w)
      : b(builder), d(lanes(Type::getDoubleTy(builder.getContext()), w)), i(lanes(Type::getInt64Ty(builder.getContext()), w)) {}
  static Type* lanes(Type* t, int w) {
    return w == 1 ? t : static_cast<Type*>(llvm::FixedVectorType::get(t, static_cast<unsigned>(w)));
  }
  D c(double v) { return llvm::ConstantFP::get(d, v); }
  Value* ic(uint64_t v) { return llvm::ConstantInt::get(i, v); }
  D add(D x, D y) { return b.CreateFAdd(x, y); }
  D sub(D x, D y) { return b.CreateFSub(x, y); }
  D mul(D x, D y) { return b.CreateFMul(x, y); }
  D div(D x, D y) { return b.CreateFDiv(x, y); }
  D fma(D x, D y, D z) { return b.CreateIntrinsic(llvm::Intrinsic::fma, {d}, {x, y, z}); }
  D abs(D x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x); }
  D copysign(D x, D y) { return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, x, y); }
  B lt(D x, D y) { return b.CreateFCmpOLT(x, y); }
  B gt(D x, D y) { return b.CreateFCmpOGT(x, y); }
  B eq(D x, D y) { return b.CreateFCmpOEQ(x, y); }
  B is_nan(D x) { return b.CreateFCmpUNO(x, x); }
  D select(B m, D x, D y) { return b.CreateSelect(m, x, y); }
  I bits(D x) { return b.CreateBitCast(x, i); }
  D from_bits(I x) { return b.CreateBitCast(x, d); }
  I iadd(I x, uint64_t y) { return b.CreateAdd(x, ic(y)); }
  I isub(I x, I y) { return b.CreateSub(x, y); }
  I iand(I x, uint64_t y) { return b.CreateAnd(x, ic(y)); }
  I ior(I x, uint64_t y) { return b.CreateOr(x, ic(y)); }
  I shl(I x, int n) { return b.CreateShl(x, ic(static_cast<uint64_t>(n))); }
  I shr(I x, int n) { return b.CreateLShr(x, ic(static_cast<uint64_t>(n))); }
  D u2d(I x) { return b.CreateUIToFP(x, d); }
};

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

  Value* as_float(Value* v) {  // register -> f32 (exact for f32 registers)
    Type* f = Type::getFloatTy(b_.getContext());
    return reg_ == f ? v : b_.CreateFPTrunc(v, vec(f, width_of(v)));
  }
  Value* from_float(Value* v) {
    return reg_->isFloatTy() ? v : b_.CreateFPExt(v, vec(reg_, width_of(v)));
  }
  static int width_of(Value* v) {
    if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) return static_cast<int>(vt->getNumElements());
    return 1;
  }
  Type* int_vec(unsigned bits, int w) { return vec(Type::getIntNTy(b_.getContext(), bits), w); }

  // half.h's f32_to_bf16_bits: NaN keeps its top payload, quieted; else round to nearest even.
  // The choice is made on the 32-bit words and shifted once, and NaN is one unordered compare:
  // two instructions fewer per vector than testing the bits, for the same 16 bits.
  Value* bf16_bits(Value* f) {
    const int w = width_of(f);
    auto u32 = [&](uint32_t x) { return llvm::ConstantInt::get(int_vec(32, w), x); };
    Value* u = b_.CreateBitCast(f, int_vec(32, w));
    Value* nan = b_.CreateFCmpUNO(f, f);
    Value* quiet = b_.CreateOr(u, u32(0x00400000u));  // after the shift: | 0x40
    Value* lsb = b_.CreateAnd(b_.CreateLShr(u, u32(16)), u32(1));
    Value* rounded = b_.CreateAdd(u, b_.CreateAdd(lsb, u32(0x7fffu)));
    return b_.CreateTrunc(b_.CreateLShr(b_.CreateSelect(nan, quiet, rounded), u32(16)), int_vec(16, w));
  }
  Value* bf16_to_float(Value* bits) {
    const int w = width_of(bits);
    Value* u = b_.CreateShl(b_.CreateZExt(bits, int_vec(32, w)), llvm::ConstantInt::get(int_vec(32, w), 16));
    return b_.CreateBitCast(u, vec(Type::getFloatTy(b_.getContext()), w));
  }

  Value* to_register(Value* raw, DType dt) {
    const int w = width_of(raw);
    Type* r = vec(reg_, w);
    switch (dt) {
      case DType::kF32: case DType::kF64: return b_.CreateFPCast(raw, r);
      case DType::kBF16: return from_float(bf16_to_float(raw));
      case DType::kF16: return b_.CreateFPExt(raw, r);
      case DType::kI32: case DType::kI64: return b_.CreateSIToFP(raw, r);
      case DType::kU8: return b_.CreateUIToFP(raw, r);
      case DType::kBool: return b_.CreateUIToFP(b_.CreateICmpNE(raw, llvm::Constant::getNullValue(raw->getType())), r);
    }
    return nullptr;
  }

  void store_as(Value* out, DType dt, Value* index, Value* v, int w) {
    llvm::LLVMContext& c = b_.getContext();
    Value* m = nullptr;
    switch (dt) {
      case DType::kF32: case DType::kF64: m = b_.CreateFPCast(v, vec(mem_type(dt), w)); break;
      case DType::kBF16: m = bf16_bits(as_float(v)); break;
      case DType::kF16: m = b_.CreateFPTrunc(as_float(v), vec(Type::getHalfTy(c), w)); break;
      case DType::kI32: case DType::kI64: m = b_.CreateFPToSI(v, vec(mem_type(dt), w)); break;
      // As GCC converts to uint8_t: through int32, then the low byte.
      case DType::kU8: m = b_.CreateTrunc(b_.CreateFPToSI(v, int_vec(32, w)), int_vec(8, w)); break;
      case DType::kBool: m = b_.CreateZExt(b_.CreateFCmpUNE(v, fconst(0, w)), int_vec(8, w)); break;
    }
    b_.CreateAlignedStore(m, b_.CreateGEP(mem_type(dt), out, index), llvm::Align(size_of(dt)));
  }

  // A libm function of one or two register values, lane by lane (the interpreter calls the
  // same scalar functions, so the results are identical).
  Value* call_math(const char* name, Value* a, Value* bv = nullptr) {
    const bool f64 = reg_->isDoubleTy();
    std::string fn = name;
    if (target_ == KernelTarget::kNvptx) fn = "__nv_" + fn + (f64 ? "" : "f");
    else if (!f64) fn += "f";
    llvm::Module* m = b_.GetInsertBlock()->getModule();
    std::vector<Type*> params(bv == nullptr ? 1 : 2, reg_);
    llvm::FunctionCallee callee = m->getOrInsertFunction(fn, llvm::FunctionType::get(reg_, params, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      f->setDoesNotThrow();
      f->setOnlyAccessesArgMemory();  // pure, given -fno-math-errno semantics
    }
    const int w = width_of(a);
    if (w == 1) return bv == nullptr ? b_.CreateCall(callee, {a}) : b_.CreateCall(callee, {a, bv});
    Value* r = llvm::PoisonValue::get(vec(reg_, w));
    for (int l = 0; l < w; ++l) {
      Value* x = b_.CreateExtractElement(a, static_cast<uint64_t>(l));
      Value* y = bv == nullptr ? nullptr : b_.CreateExtractElement(bv, static_cast<uint64_t>(l));
      Value* e = y == nullptr ? b_.CreateCall(callee, {x}) : b_.CreateCall(callee, {x, y});
      r = b_.CreateInsertElement(r, e, static_cast<uint64_t>(l));
    }
    return r;
  }

  // f32 registers on the CPU run core/float_math.h's recipes, as the interpreter does; f64
  // registers and the GPU's libdevice keep their libm functions.
  bool f32_recipes() const { return target_ == KernelTarget::kCpu && reg_->isFloatTy(); }
  // exp, log or tanh of `a`: the recipe on f32 CPU registers, else the libm/libdevice function.
  Value* transcendental(LoopOp op, Value* a) {
    const char* libm = op == LoopOp::kExp ? "exp" : op == LoopOp::kLog ? "log" : "tanh";
    if (!f32_recipes()) return call_math(libm, a);
    IrArith m(b_, width_of(a));
    Value* x = b_.CreateFPExt(a, m.d);
    Value* r = op == LoopOp::kExp   ? float_math::exp_f32_recipe(m, x)
               : op == LoopOp::kLog ? float_math::log_f32_recipe(m, x)
                                    : float_math::tanh_f32_recipe(m, x);
    return b_.CreateFPTrunc(r, a->getType());
  }

  Value* bool_value(Value* cond) { return b_.CreateUIToFP(cond, vec(reg_, width_of(cond))); }
  // An i64 integer's low 32 bits as a signed i32, back in a register.
  Value* wrap_i32(Value* v, int w) {
    return b_.CreateSIToFP(b_.CreateTrunc(v, vec(Type::getInt32Ty(b_.getContext()), w)), vec(reg_, w));
  }

  Value* op(const LoopInstr& in, const std::vector<Value*>& srcs, const Row& row, Value* row_flat, Value* j, int w,
            Value* a, Value* bv, Value* c) {
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
      case LoopOp::kNeg: return b_.CreateFNeg(a);
      case LoopOp::kAbs: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a);
      case LoopOp::kSign: {
        Value* zero = fconst(0, w);
        return b_.CreateSelect(b_.CreateFCmpOGT(a, zero), fconst(1, w),
                               b_.CreateSelect(b_.CreateFCmpOLT(a, zero), fconst(-1, w), a));
      }
      case LoopOp::kExp: case LoopOp::kLog: case LoopOp::kTanh: return transcendental(in.op, a);
      case LoopOp::kLog1p: return call_math("log1p", a);
      case LoopOp::kErf: return call_math("erf", a);
      case LoopOp::kPow: return call_math("pow", a, bv);
      case LoopOp::kLogistic: return b_.CreateFDiv(fconst(1, w), b_.CreateFAdd(fconst(1, w), transcendental(LoopOp::kExp, b_.CreateFNeg(a))));
      case LoopOp::kSqrt: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a);
      case LoopOp::kRsqrt: return b_.CreateFDiv(fconst(1, w), b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a));
      case LoopOp::kCopy: return a;
      case LoopOp::kTrunc: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, a);
      case LoopOp::kToBool: return bool_value(b_.CreateFCmpUNE(a, fconst(0, w)));
      case LoopOp::kRoundF32: return from_float(as_float(a));
      case LoopOp::kRoundBF16: return from_float(bf16_to_float(bf16_bits(as_float(a))));
      case LoopOp::kRoundF16:
        return b_.CreateFPExt(b_.CreateFPTrunc(as_float(a), vec(Type::getHalfTy(b_.getContext()), w)), vec(reg_, w));
      case LoopOp::kAdd: return b_.CreateFAdd(a, bv);
      case LoopOp::kSub: return b_.CreateFSub(a, bv);
      case LoopOp::kMul: return b_.CreateFMul(a, bv);
      case LoopOp::kDiv: return b_.CreateFDiv(a, bv);
      case LoopOp::kDivInt: case LoopOp::kDivUnsigned:  // x / 0 has all bits set: -1, or 255 for u8
        return b_.CreateSelect(b_.CreateFCmpOEQ(bv, fconst(0, w)), fconst(in.op == LoopOp::kDivInt ? -1 : 255, w),
                               b_.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, b_.CreateFDiv(a, bv)));
      // NaN propagates, as in XLA (and the interpreter: a > b || a != a ? a : b).
      case LoopOp::kMax: return b_.CreateSelect(b_.CreateOr(b_.CreateFCmpOGT(a, bv), b_.CreateFCmpUNO(a, a)), a, bv);
      case LoopOp::kMin: return b_.CreateSelect(b_.CreateOr(b_.CreateFCmpOLT(a, bv), b_.CreateFCmpUNO(a, a)), a, bv);
      case LoopOp::kEq: return bool_value(b_.CreateFCmpOEQ(a, bv));
      case LoopOp::kNe: return bool_value(b_.CreateFCmpUNE(a, bv));
      case LoopOp::kLt: return bool_value(b_.CreateFCmpOLT(a, bv));
      case LoopOp::kLe: return bool_value(b_.CreateFCmpOLE(a, bv));
      case LoopOp::kGt: return bool_value(b_.CreateFCmpOGT(a, bv));
      case LoopOp::kGe: return bool_value(b_.CreateFCmpOGE(a, bv));
      case LoopOp::kSelect: return b_.CreateSelect(b_.CreateFCmpUNE(a, fconst(0, w)), bv, c);
      case LoopOp::kWrapI32: return wrap_i32(b_.CreateFPToSI(a, vec(i64_, w)), w);
      case LoopOp::kMulI32:
        return wrap_i32(b_.CreateMul(b_.CreateFPToSI(a, vec(i64_, w)), b_.CreateFPToSI(bv, vec(i64_, w))), w);
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
