#include "kiln/compiler/passes/cse.h"

#include <gtest/gtest.h>

#include "kiln/ir/builder.h"
#include "tests/compiler/test_target.h"

namespace kiln::compiler {
namespace {

using ir::Opcode;
using testing::run_and_print;

TEST(CsePassTest, MergesIdenticalInstructionsAndCommutedOperands) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {3}), "x");
  auto* y = b.parameter(Shape(DType::kF32, {3}), "y");
  auto* a1 = b.binary(Opcode::kAdd, x, y);
  auto* a2 = b.binary(Opcode::kAdd, y, x);  // commuted: same value
  auto* e1 = b.unary(Opcode::kExp, a1);
  auto* e2 = b.unary(Opcode::kExp, a2);
  auto* s1 = b.binary(Opcode::kSub, x, y);
  auto* s2 = b.binary(Opcode::kSub, y, x);  // not commutative: kept
  m.entry()->set_outputs({b.binary(Opcode::kMul, e1, e2), s1, s2});
  EXPECT_EQ(ir::to_string(m),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[3] parameter(0) \"x\"\n"
            "  %1 = f32[3] parameter(1) \"y\"\n"
            "  %2 = f32[3] add(%0, %1)\n"
            "  %3 = f32[3] exp(%2)\n"
            "  %4 = f32[3] add(%1, %0)\n"
            "  %5 = f32[3] exp(%4)\n"
            "  %6 = f32[3] mul(%3, %5)\n"
            "  %7 = f32[3] sub(%0, %1)\n"
            "  %8 = f32[3] sub(%1, %0)\n"
            "  outputs(%6, %7, %8)\n"
            "}\n");
  CsePass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[3] parameter(0) \"x\"\n"
            "  %1 = f32[3] parameter(1) \"y\"\n"
            "  %2 = f32[3] add(%0, %1)\n"
            "  %3 = f32[3] exp(%2)\n"
            "  %4 = f32[3] mul(%3, %3)\n"
            "  %5 = f32[3] sub(%0, %1)\n"
            "  %6 = f32[3] sub(%1, %0)\n"
            "  outputs(%4, %5, %6)\n"
            "}\n");
}

TEST(CsePassTest, MergesEqualConstantsButNotParametersOrDifferentAttributes) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {2, 2}), "x");
  auto* x2 = b.parameter(Shape(DType::kF32, {2, 2}), "x2");
  auto* c1 = b.scalar(2, DType::kF32);
  auto* c2 = b.scalar(2, DType::kF32);
  auto* r0 = b.reduce(Opcode::kReduceSum, x, {0});
  auto* r1 = b.reduce(Opcode::kReduceSum, x, {1});
  m.entry()->set_outputs({b.binary(Opcode::kAdd, c1, c2), r0, r1, x2});
  CsePass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[2,2] parameter(0) \"x\"\n"
            "  %1 = f32[2,2] parameter(1) \"x2\"\n"
            "  %2 = f32[] constant(2)\n"
            "  %3 = f32[] add(%2, %2)\n"
            "  %4 = f32[2] reduce_sum(%0), axes={0}\n"
            "  %5 = f32[2] reduce_sum(%0), axes={1}\n"
            "  outputs(%3, %4, %5, %1)\n"
            "}\n");
}

TEST(CsePassTest, MergesRandomBitsOnlyWithTheSameKey) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* k1 = b.parameter(Shape(DType::kI64, {}), "k1");
  auto* k2 = b.parameter(Shape(DType::kI64, {}), "k2");
  m.entry()->set_outputs({b.rng_bits(k1, {4}), b.rng_bits(k1, {4}), b.rng_bits(k2, {4})});
  CsePass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "entry {\n"
            "  %0 = i64[] parameter(0) \"k1\"\n"
            "  %1 = i64[] parameter(1) \"k2\"\n"
            "  %2 = i32[4] rng_bits(%0)\n"
            "  %3 = i32[4] rng_bits(%1)\n"
            "  outputs(%2, %2, %3)\n"
            "}\n");
}

}  // namespace
}  // namespace kiln::compiler
