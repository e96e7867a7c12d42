// LoopIr: a loop-fusion body lowered to flat register programs, the form both the CPU
// interpreter (runtime/cpu/loop_kernel) and the code generator (llvm_emitter) consume. A body
// becomes one or more stages; a stage is a register program over one index space (its shape).
// Values a broadcast reads that are computed inside the body (not parameters or constants)
// get a stage of their own, materialized first. Registers hold float, or double when the body
// touches f64, i64 or i32 (float holds integers exactly only below 2^24; double holds every
// i32, and i64 below 2^53). In a double body every f32-typed arithmetic result is rounded to
// f32, which gives exactly the f32 operation's result for + - * / and sqrt (double has more
// than twice f32's precision). Every executor of a LoopIr keeps the register type, so they
// agree bit for bit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/core/shape.h"
#include "kiln/ir/instruction.h"

namespace kiln::codegen {

enum class LoopOp : uint8_t {
  kLoad, kSplat, kIota,
  kNeg, kAbs, kSign, kExp, kLog, kLog1p, kTanh, kLogistic, kSqrt, kRsqrt, kErf,
  kCopy, kTrunc, kToBool, kRoundF32, kRoundBF16, kRoundF16,
  kAdd, kSub, kMul, kDiv, kDivInt, kDivUnsigned, kPow, kMax, kMin,
  kEq, kNe, kLt, kLe, kGt, kGe,
  kSelect,
  // i32 arithmetic wraps modulo 2^32 as the IR defines: kWrapI32 wraps an exact integer in a
  // double register; kMulI32 multiplies in 64-bit integers (a double product of two i32s
  // beyond 2^53 would round before it wraps).
  kWrapI32, kMulI32,
};

/// Where a load reads: a body parameter, an earlier stage's result, or a constant literal.
struct LoopLoad {
  enum Kind { kParameter, kStage, kLiteral } kind;
  int index;      // parameter index, stage index, or literal index
  DType dtype;
  Dims strides;   // per dim of the stage shape; 0 where broadcast
  bool contiguous;
  int64_t offset = 0;  // element offset of index 0 in the source (slices)
};

struct LoopInstr {
  LoopOp op;
  int dst = 0, a = 0, b = 0, c = 0;
  double value = 0;          // kSplat; a binary op's second operand when b_is_scalar
  bool b_is_scalar = false;  // a binary op whose second operand is the constant `value`
  int load = -1;             // kLoad
  int64_t div = 1, mod = 1;  // kIota: (i / div) % mod
};

/// A value a stage stores: a register, converted to `dtype` on the way to memory.
struct LoopResult {
  int reg = 0;
  DType dtype = DType::kF32;
};

struct LoopStage {
  Shape shape;
  std::vector<LoopInstr> code;
  std::vector<LoopLoad> loads;
  int num_registers = 0;
  /// What the stage stores, output k to its k-th destination. Inner stages and single-output
  /// bodies store one value (of the stage shape's dtype); a horizontally fused body stores
  /// one per output, each at the same element index.
  std::vector<LoopResult> results;
};

struct LoopIr {
  std::vector<LoopStage> stages;  // the last one computes the result
  std::vector<HostTensor> literals;
  bool use_double = false;

  /// Lowers the value of `root`, whose leaves are parameters of its computation. nullopt when
  /// it holds an op a loop cannot run (the caller then uses another kernel).
  static std::optional<LoopIr> build(const ir::Instruction& root);
  /// Lowers several values of one computation, all over the same dims (dtypes may differ),
  /// into one last stage that computes them together and stores each (horizontal fusion):
  /// a value the roots share is computed once.
  static std::optional<LoopIr> build(const std::vector<const ir::Instruction*>& roots);
  /// Everything that decides the generated code (ops, shapes, strides, literal bytes), as
  /// text: two LoopIrs with the same key compute the same function. Cache keys use it.
  std::string key() const;
};

/// Whether a body holding a value of `dtype` computes in double registers.
inline bool needs_double_registers(DType dtype) {
  return dtype == DType::kF64 || dtype == DType::kI64 || dtype == DType::kI32;
}

/// How many register operands `in` reads (a, b, c in that order).
int loop_operand_count(const LoopInstr& in);

}  // namespace kiln::codegen
