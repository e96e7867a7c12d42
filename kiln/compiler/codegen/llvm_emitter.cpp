// LoopIr -> LLVM IR. A CPU stage function walks its range row by row over the stage's shape
// after merging dims that every load walks alike (so an elementwise body is one row); each row
// runs a W-lane vector loop (explicit vectors, so no alias analysis is needed: an output may
// be an input's buffer, as the memory planner allows) and a scalar tail. Loads whose inner
// stride is 0 are read once per row; other strides gather.
#include "kiln/compiler/codegen/llvm_emitter_impl.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/core/float_math.h"
#include "kiln/core/str_cat.h"

namespace kiln::codegen {
namespace {

using llvm::IRBuilder;
using llvm::Type;
using llvm::Value;

// A stage's index space after dropping size-1 dims and merging dims that every load (and the
// output) walks contiguously together.
struct Space {
  Dims dims;                 // collapsed; at least one
  std::vector<Dims> strides; // per load, per collapsed dim
};

Space collapse(const LoopStage& st) {
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
  Value* bf16_bits(Value* f) {
    const int w = width_of(f);
    auto u32 = [&](uint32_t x) { return llvm::ConstantInt::get(int_vec(32, w), x); };
    Value* u = b_.CreateBitCast(f, int_vec(32, w));
    Value* nan = b_.CreateICmpUGT(b_.CreateAnd(u, u32(0x7fffffffu)), u32(0x7f800000u));
    Value* quiet = b_.CreateOr(b_.CreateLShr(u, u32(16)), u32(0x40u));
    Value* lsb = b_.CreateAnd(b_.CreateLShr(u, u32(16)), u32(1));
    Value* rounded = b_.CreateLShr(b_.CreateAdd(u, b_.CreateAdd(u32(0x7fffu), lsb)), u32(16));
    return b_.CreateTrunc(b_.CreateSelect(nan, quiet, rounded), int_vec(16, w));
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
