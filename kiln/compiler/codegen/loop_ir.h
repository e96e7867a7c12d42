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
#include "kiln/ir/elementwise.h"
#include "kiln/ir/instruction.h"

namespace kiln::codegen {

// The ops of the registers beside the elementwise table's rows (ir/elementwise.def):
// conversions, comparisons and select on 0/1 values, and the integer forms of the table's ops
// (integers live in float registers, exactly below 2^24, or 2^53 in double registers).
// X(Name, arity, computes, exactness, math of a, b, c over an arithmetic m, as the table's)
//   computes: the result is a new value, which a double register rounds to f32 for an f32
//             result (not so for copies, 0/1 masks and values already rounded).
#define KILN_REGISTER_OPS(X)                                                                      \
  X(Copy, 1, false, kRepresentable, a)                                                            \
  X(Trunc, 1, true, kRepresentable, m.trunc(a))                                                   \
  X(ToBool, 1, false, kRepresentable, m.from_mask(m.ne(a, m.c(0))))                               \
  X(RoundF32, 1, false, kRounded, m.round_f32(a))                                                 \
  X(RoundBF16, 1, true, kRepresentable, m.round_bf16(a))                                          \
  X(RoundF16, 1, true, kRepresentable, m.round_f16(a))                                            \
  X(Eq, 2, false, kRepresentable, m.from_mask(m.eq(a, b)))                                        \
  X(Ne, 2, false, kRepresentable, m.from_mask(m.ne(a, b)))                                        \
  X(Lt, 2, false, kRepresentable, m.from_mask(m.lt(a, b)))                                        \
  X(Le, 2, false, kRepresentable, m.from_mask(m.le(a, b)))                                        \
  X(Gt, 2, false, kRepresentable, m.from_mask(m.gt(a, b)))                                        \
  X(Ge, 2, false, kRepresentable, m.from_mask(m.ge(a, b)))                                        \
  X(Select, 3, false, kRepresentable, m.select(m.ne(a, m.c(0)), b, c))                            \
  /* i32 arithmetic wraps modulo 2^32 as the IR defines: WrapI32 wraps an exact integer; */        \
  /* MulI32 multiplies in 64-bit integers (a double product beyond 2^53 would round first). */     \
  X(WrapI32, 1, true, kRounded, m.wrap_i32(a))                                                    \
  X(MulI32, 2, true, kRounded, m.mul_i32(a, b))                                                   \
  /* Integer division truncates; x / 0 has all bits set: -1, or 255 for u8. */                    \
  X(DivInt, 2, true, kRounded, m.select(m.eq(b, m.c(0)), m.c(-1), m.trunc(m.div(a, b))))          \
  X(DivUnsigned, 2, true, kRounded, m.select(m.eq(b, m.c(0)), m.c(255), m.trunc(m.div(a, b))))    \
  /* The table's mod with x mod 0 = x and no -0 (+ 0 makes -0 +0). */                             \
  X(ModInt, 2, true, kLibm, m.select(m.eq(b, m.c(0)), a, m.add(ir::elementwise::Mod::apply(m, a, b), m.c(0))))

/// A loop register program's ops: loads, constants and iota, every row of the elementwise
/// table (same names as their opcodes) and the register ops above.
enum class LoopOp : uint8_t {
  kLoad, kSplat, kIota,
#define KILN_UNARY(N, ...) k##N,
#define KILN_BINARY(N, ...) k##N,
#include "kiln/ir/elementwise.def"
#undef KILN_UNARY
#undef KILN_BINARY
#define KILN_REGISTER_OP_ENUM(N, ...) k##N,
  KILN_REGISTER_OPS(KILN_REGISTER_OP_ENUM)
#undef KILN_REGISTER_OP_ENUM
};

/// The register op that computes the table's row `op` on integers of dtype `t` held in float
/// registers, where the row's own math would differ (x / 0, a product past 2^53, x mod 0), or
/// nullopt: the row's LoopOp then computes integers too.
inline std::optional<LoopOp> integer_form(ir::Opcode op, DType t) {
  if (is_floating(t)) return std::nullopt;
  if (op == ir::Opcode::kMul && t == DType::kI32) return LoopOp::kMulI32;
  if (op == ir::Opcode::kDiv) return t == DType::kU8 ? LoopOp::kDivUnsigned : LoopOp::kDivInt;
  if (op == ir::Opcode::kMod) return LoopOp::kModInt;
  return std::nullopt;
}

/// An op's columns: its register operands, whether it computes a new value, and its exactness.
struct LoopOpInfo {
  int arity;
  bool computes;
  ir::elementwise::Exactness exactness;
};

inline constexpr LoopOpInfo kLoopOpInfo[] = {
    {0, false, ir::elementwise::Exactness::kRounded},  // load: the value in memory
    {0, false, ir::elementwise::Exactness::kRounded},  // splat
    {0, false, ir::elementwise::Exactness::kRounded},  // iota
#define KILN_UNARY(N, ...) {1, true, ir::elementwise::N::kInfo.exactness},
#define KILN_BINARY(N, ...) {2, true, ir::elementwise::N::kInfo.exactness},
#include "kiln/ir/elementwise.def"
#undef KILN_UNARY
#undef KILN_BINARY
#define KILN_REGISTER_OP_INFO(N, arity, computes, exactness, math) {arity, computes, ir::elementwise::Exactness::exactness},
    KILN_REGISTER_OPS(KILN_REGISTER_OP_INFO)
#undef KILN_REGISTER_OP_INFO
};

inline const LoopOpInfo& loop_op_info(LoopOp op) { return kLoopOpInfo[static_cast<size_t>(op)]; }

/// The register ops' math: register_ops::Name::apply(m, a, b, c) (operands past the arity
/// unused).
namespace register_ops {
#define KILN_REGISTER_OP_STRUCT(N, arity, computes, exactness, math)                                  \
  struct N {                                                                                          \
    template <class M>                                                                                \
    static typename M::V apply(M& m, typename M::V a, [[maybe_unused]] typename M::V b,               \
                               [[maybe_unused]] typename M::V c) {                                    \
      static_cast<void>(m);                                                                           \
      return math;                                                                                    \
    }                                                                                                 \
  };
KILN_REGISTER_OPS(KILN_REGISTER_OP_STRUCT)
#undef KILN_REGISTER_OP_STRUCT
}  // namespace register_ops

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
