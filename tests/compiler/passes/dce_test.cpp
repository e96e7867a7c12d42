#include "kiln/compiler/passes/dce.h"

#include <gtest/gtest.h>

#include "kiln/compiler/passes/elementwise_fusion.h"
#include "kiln/ir/builder.h"
#include "tests/compiler/test_target.h"

namespace kiln::compiler {
namespace {

using ir::Opcode;
using testing::run_and_print;

TEST(DcePassTest, RemovesUnreachableInstructionsButKeepsParameters) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {3}), "x");
  b.parameter(Shape(DType::kF32, {3}), "unused");
  auto* dead = b.unary(Opcode::kExp, x);
  b.unary(Opcode::kLog, dead);
  m.entry()->set_outputs({b.unary(Opcode::kNeg, x)});
  size_t before = m.entry()->instructions().size();
  DcePass pass;
  bool changed = false;
  EXPECT_EQ(run_and_print(pass, m, &changed),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[3] parameter(0) \"x\"\n"
            "  %1 = f32[3] parameter(1) \"unused\"\n"
            "  %2 = f32[3] neg(%0)\n"
            "  outputs(%2)\n"
            "}\n");
  EXPECT_TRUE(changed);
  EXPECT_EQ(m.entry()->instructions().size(), before - 2);
  EXPECT_TRUE(x->users().size() == 1);
}

TEST(DcePassTest, RemovesFusionBodiesNothingCalls) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {3}), "x");
  auto* e = b.unary(Opcode::kExp, b.unary(Opcode::kNeg, x));
  m.entry()->set_outputs({e});
  ElementwiseFusionPass fusion;
  fusion.run(m);
  ASSERT_EQ(m.computations().size(), 2u);
  m.entry()->set_outputs({x});
  DcePass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[3] parameter(0) \"x\"\n"
            "  outputs(%0)\n"
            "}\n");
  EXPECT_EQ(m.computations().size(), 1u);
  bool changed = true;
  run_and_print(pass, m, &changed);
  EXPECT_FALSE(changed);
}

}  // namespace
}  // namespace kiln::compiler
