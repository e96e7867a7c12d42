// The code generator's arithmetics over LLVM IR values: IrArith, core/float_math.h's recipes
// over f64 lanes, and IrValueArith, core/scalar_arith.h's vocabulary over register values (f32
// or f64 lanes), which the elementwise table's math (ir/elementwise.def) and the register ops
// (loop_ir.h) are instantiated with. Each call emits the one IEEE operation, libm call or
// recipe that ScalarArith computes, so generated code matches the interpreter bit for bit.
// Internal: includes LLVM headers.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <string>
#include <vector>

#include "kiln/compiler/codegen/llvm_emitter_impl.h"
#include "kiln/core/float_math.h"
#include "kiln/core/scalar_arith.h"

namespace kiln::codegen {

/// `t`, or a vector of `w` lanes of it.
inline llvm::Type* lanes_of(llvm::Type* t, int w) {
  return w == 1 ? t : static_cast<llvm::Type*>(llvm::FixedVectorType::get(t, static_cast<unsigned>(w)));
}

/// The lane count of a value (1 for a scalar).
inline int width_of(llvm::Value* v) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) return static_cast<int>(vt->getNumElements());
  return 1;
}

// core/float_math.h's arithmetic over IR values of `w` f64 lanes: each call is the one IEEE
// operation the scalar arithmetic does, so generated code matches the interpreter bit for bit.
struct IrArith {
  using D = llvm::Value*;
  using I = llvm::Value*;
  using B = llvm::Value*;
  llvm::IRBuilder<>& b;
  llvm::Type* d;  // <w x double>
  llvm::Type* i;  // <w x i64>

  IrArith(llvm::IRBuilder<>& builder, int w)
      : b(builder),
        d(lanes_of(llvm::Type::getDoubleTy(builder.getContext()), w)),
        i(lanes_of(llvm::Type::getInt64Ty(builder.getContext()), w)) {}
  D c(double v) { return llvm::ConstantFP::get(d, v); }
  llvm::Value* ic(uint64_t v) { return llvm::ConstantInt::get(i, v); }
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

// ScalarArith's vocabulary over register values: `w` lanes of the register type (float, or
// double when the body needs it), masks as i1 lanes.
struct IrValueArith {
  using V = llvm::Value*;
  using B = llvm::Value*;
  llvm::IRBuilder<>& b;
  llvm::Type* reg;  // the scalar register type
  int w;
  KernelTarget target;

  llvm::Type* type() const { return lanes_of(reg, w); }
  llvm::Type* int_lanes(unsigned bits) const { return lanes_of(llvm::Type::getIntNTy(b.getContext(), bits), w); }
  llvm::Type* f32_lanes() const { return lanes_of(llvm::Type::getFloatTy(b.getContext()), w); }

  V c(double v) { return llvm::ConstantFP::get(type(), v); }
  V add(V x, V y) { return b.CreateFAdd(x, y); }
  V sub(V x, V y) { return b.CreateFSub(x, y); }
  V mul(V x, V y) { return b.CreateFMul(x, y); }
  V div(V x, V y) { return b.CreateFDiv(x, y); }
  V rem(V x, V y) { return call_math("fmod", x, y); }  // libm's exact fmod, as the interpreter's
  V neg(V x) { return b.CreateFNeg(x); }
  V abs(V x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x); }
  V sqrt(V x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x); }
  V floor(V x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x); }
  V ceil(V x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x); }
  V trunc(V x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, x); }
  // rint in the default rounding mode, which Kiln never changes: halves to even, as
  // ScalarArith's nearbyint. (LLVM 15's NVPTX backend has no llvm.roundeven; rint is cvt.rni.)
  V round_even(V x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, x); }
  V exp(V x) { return transcendental("exp", x); }
  V log(V x) { return transcendental("log", x); }
  V tanh(V x) { return transcendental("tanh", x); }
  template <class Fn, class... A>
  V call(const arith::Libm<Fn>& f, A... a) {
    return call_math(f.name, a...);
  }

  B lt(V x, V y) { return b.CreateFCmpOLT(x, y); }
  B le(V x, V y) { return b.CreateFCmpOLE(x, y); }
  B gt(V x, V y) { return b.CreateFCmpOGT(x, y); }
  B ge(V x, V y) { return b.CreateFCmpOGE(x, y); }
  B eq(V x, V y) { return b.CreateFCmpOEQ(x, y); }
  B ne(V x, V y) { return b.CreateFCmpUNE(x, y); }  // true when either is NaN, as C++'s !=
  B is_nan(V x) { return b.CreateFCmpUNO(x, x); }
  B and_(B x, B y) { return b.CreateAnd(x, y); }
  B or_(B x, B y) { return b.CreateOr(x, y); }
  B xor_(B x, B y) { return b.CreateXor(x, y); }
  V select(B m, V x, V y) { return b.CreateSelect(m, x, y); }
  V from_mask(B m) { return b.CreateUIToFP(m, type()); }

  V round_f32(V x) { return from_float(as_float(x)); }
  V round_bf16(V x) { return from_float(bf16_to_float(bf16_bits(as_float(x)))); }
  V round_f16(V x) { return b.CreateFPExt(b.CreateFPTrunc(as_float(x), lanes_of(llvm::Type::getHalfTy(b.getContext()), w)), type()); }
  V wrap_i32(V x) { return low_i32(b.CreateFPToSI(x, int_lanes(64))); }
  V mul_i32(V x, V y) { return low_i32(b.CreateMul(b.CreateFPToSI(x, int_lanes(64)), b.CreateFPToSI(y, int_lanes(64)))); }

  // Conversions between registers, f32 and bf16 bits, shared with the loads and stores.
  V as_float(V v) { return reg->isFloatTy() ? v : b.CreateFPTrunc(v, f32_lanes()); }  // exact for f32 registers
  V from_float(V v) { return reg->isFloatTy() ? v : b.CreateFPExt(v, type()); }
  // half.h's f32_to_bf16_bits: NaN keeps its top payload, quieted; else round to nearest even.
  // The choice is made on the 32-bit words and shifted once, and NaN is one unordered compare:
  // two instructions fewer per vector than testing the bits, for the same 16 bits.
  V bf16_bits(V f) {
    auto u32 = [&](uint32_t x) { return llvm::ConstantInt::get(int_lanes(32), x); };
    V u = b.CreateBitCast(f, int_lanes(32));
    V nan = b.CreateFCmpUNO(f, f);
    V quiet = b.CreateOr(u, u32(0x00400000u));  // after the shift: | 0x40
    V lsb = b.CreateAnd(b.CreateLShr(u, u32(16)), u32(1));
    V rounded = b.CreateAdd(u, b.CreateAdd(lsb, u32(0x7fffu)));
    return b.CreateTrunc(b.CreateLShr(b.CreateSelect(nan, quiet, rounded), u32(16)), int_lanes(16));
  }
  V bf16_to_float(V bits) {
    V u = b.CreateShl(b.CreateZExt(bits, int_lanes(32)), llvm::ConstantInt::get(int_lanes(32), 16));
    return b.CreateBitCast(u, f32_lanes());
  }

 private:
  // An i64 integer's low 32 bits as a signed i32, back in a register.
  V low_i32(V v) { return b.CreateSIToFP(b.CreateTrunc(v, int_lanes(32)), type()); }

  // A libm function of one or two register values, lane by lane (the interpreter calls the
  // same scalar functions, so the results are identical).
  V call_math(const char* name, V x, V y = nullptr) {
    const bool f64 = reg->isDoubleTy();
    std::string fn = name;
    if (target == KernelTarget::kNvptx) fn = "__nv_" + fn + (f64 ? "" : "f");
    else if (!f64) fn += "f";
    llvm::Module* m = b.GetInsertBlock()->getModule();
    std::vector<llvm::Type*> params(y == nullptr ? 1 : 2, reg);
    llvm::FunctionCallee callee = m->getOrInsertFunction(fn, llvm::FunctionType::get(reg, params, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      f->setDoesNotThrow();
      f->setOnlyAccessesArgMemory();  // pure, given -fno-math-errno semantics
    }
    if (w == 1) return y == nullptr ? b.CreateCall(callee, {x}) : b.CreateCall(callee, {x, y});
    V r = llvm::PoisonValue::get(type());
    for (int l = 0; l < w; ++l) {
      V xl = b.CreateExtractElement(x, static_cast<uint64_t>(l));
      V yl = y == nullptr ? nullptr : b.CreateExtractElement(y, static_cast<uint64_t>(l));
      V e = yl == nullptr ? b.CreateCall(callee, {xl}) : b.CreateCall(callee, {xl, yl});
      r = b.CreateInsertElement(r, e, static_cast<uint64_t>(l));
    }
    return r;
  }

  // exp, log or tanh: f32 registers on the CPU run core/float_math.h's recipes, as the
  // interpreter does; f64 registers and the GPU's libdevice keep their libm functions.
  V transcendental(const char* libm, V x) {
    if (target != KernelTarget::kCpu || !reg->isFloatTy()) return call_math(libm, x);
    IrArith m(b, w);
    V xd = b.CreateFPExt(x, m.d);
    const std::string name = libm;
    V r = name == "exp"   ? float_math::exp_f32_recipe(m, xd)
          : name == "log" ? float_math::log_f32_recipe(m, xd)
                          : float_math::tanh_f32_recipe(m, xd);
    return b.CreateFPTrunc(r, x->getType());
  }
};

}  // namespace kiln::codegen
