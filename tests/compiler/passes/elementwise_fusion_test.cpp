#include "kiln/compiler/passes/elementwise_fusion.h"

#include <gtest/gtest.h>

#include "kiln/ir/builder.h"
#include "tests/compiler/test_target.h"

namespace kiln::compiler {
namespace {

using ir::Opcode;
using testing::run_and_print;

TEST(ElementwiseFusionPassTest, FusesAChainIntoOneLoop) {
  // SGD update: w - lr * g
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* w = b.parameter(Shape(DType::kF32, {16}), "w");
  auto* g = b.parameter(Shape(DType::kF32, {16}), "g");
  auto* step = b.binary(Opcode::kMul, b.full(g->shape(), 0.5), g);
  m.entry()->set_outputs({b.binary(Opcode::kSub, w, step)});
  m.add_alias({0, 0});
  EXPECT_EQ(ir::to_string(m),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[16] parameter(0) \"w\"\n"
            "  %1 = f32[16] parameter(1) \"g\"\n"
            "  %2 = f32[] constant(0.5)\n"
            "  %3 = f32[16] broadcast_in_dim(%2), dims={}\n"
            "  %4 = f32[16] mul(%3, %1)\n"
            "  %5 = f32[16] sub(%0, %4)\n"
            "  outputs(%5)\n"
            "}\n"
            "aliases(output 0 -> parameter 0)\n");
  ElementwiseFusionPass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "loop_fusion.0 {\n"
            "  %0 = f32[16] parameter(0)\n"
            "  %1 = f32[16] parameter(1)\n"
            "  %2 = f32[] constant(0.5)\n"
            "  %3 = f32[16] broadcast_in_dim(%2), dims={}\n"
            "  %4 = f32[16] mul(%3, %1)\n"
            "  %5 = f32[16] sub(%0, %4)\n"
            "  outputs(%5)\n"
            "}\n"
            "entry {\n"
            "  %0 = f32[16] parameter(0) \"w\"\n"
            "  %1 = f32[16] parameter(1) \"g\"\n"
            "  %2 = f32[16] fusion(%0, %1), kind=loop, calls=loop_fusion.0\n"
            "  outputs(%2)\n"
            "}\n"
            "aliases(output 0 -> parameter 0)\n");
}

TEST(ElementwiseFusionPassTest, SharedProducerBecomesAFusionBoundary) {
  // e = exp(neg(x)) is read by two consumers: it is computed once, by its own fusion.
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {8}), "x");
  auto* e = b.unary(Opcode::kExp, b.unary(Opcode::kNeg, x));
  auto* one = b.full(x->shape(), 1);
  auto* a = b.binary(Opcode::kAdd, e, one);
  auto* s = b.binary(Opcode::kSub, e, one);
  m.entry()->set_outputs({a, b.unary(Opcode::kLog, s)});
  ElementwiseFusionPass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "loop_fusion.0 {\n"
            "  %0 = f32[8] parameter(0)\n"
            "  %1 = f32[] constant(1)\n"
            "  %2 = f32[8] broadcast_in_dim(%1), dims={}\n"
            "  %3 = f32[8] sub(%0, %2)\n"
            "  %4 = f32[8] log(%3)\n"
            "  outputs(%4)\n"
            "}\n"
            "loop_fusion.1 {\n"
            "  %0 = f32[8] parameter(0)\n"
            "  %1 = f32[] constant(1)\n"
            "  %2 = f32[8] broadcast_in_dim(%1), dims={}\n"
            "  %3 = f32[8] add(%0, %2)\n"
            "  outputs(%3)\n"
            "}\n"
            "loop_fusion.2 {\n"
            "  %0 = f32[8] parameter(0)\n"
            "  %1 = f32[8] neg(%0)\n"
            "  %2 = f32[8] exp(%1)\n"
            "  outputs(%2)\n"
            "}\n"
            "entry {\n"
            "  %0 = f32[8] parameter(0) \"x\"\n"
            "  %1 = f32[8] fusion(%0), kind=loop, calls=loop_fusion.2\n"
            "  %2 = f32[8] fusion(%1), kind=loop, calls=loop_fusion.1\n"
            "  %3 = f32[8] fusion(%1), kind=loop, calls=loop_fusion.0\n"
            "  outputs(%2, %3)\n"
            "}\n");
}

TEST(ElementwiseFusionPassTest, LeavesALoneOpAndNonElementwiseOpsAlone) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {2, 3}), "x");
  auto* t = b.transpose(b.unary(Opcode::kExp, x), {1, 0});
  m.entry()->set_outputs({b.unary(Opcode::kLog, t)});
  ElementwiseFusionPass pass;
  bool changed = true;
  std::string before = ir::to_string(m);
  EXPECT_EQ(run_and_print(pass, m, &changed), before);
  EXPECT_FALSE(changed);
}

TEST(ElementwiseFusionPassTest, SlicesJoinAsViewsOfAValueThatStaysOutside) {
  // An LSTM cell's gates: four column slices of z = x + h feed one elementwise DAG. The
  // slices fuse (as loads at an offset), z stays a kernel of its own, and a slice another
  // instruction also reads is duplicated into the fusion.
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {2, 8}), "x");
  auto* h = b.parameter(Shape(DType::kF32, {2, 8}), "h");
  auto* z = b.binary(Opcode::kAdd, x, h);
  std::vector<ir::Instruction*> gate;
  for (int64_t k = 0; k < 4; ++k) gate.push_back(b.slice(z, {0, 2 * k}, {2, 2 * k + 2}, {1, 1}));
  auto* i = b.unary(Opcode::kLogistic, gate[0]);
  auto* c = b.binary(Opcode::kMul, i, b.unary(Opcode::kTanh, gate[2]));
  auto* f = b.binary(Opcode::kMul, b.unary(Opcode::kLogistic, gate[1]), gate[3]);
  m.entry()->set_outputs({b.binary(Opcode::kAdd, c, f), gate[3]});
  ElementwiseFusionPass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "loop_fusion.0 {\n"
            "  %0 = f32[2,8] parameter(0)\n"
            "  %1 = f32[2,2] slice(%0), starts={0,0}, limits={2,2}, strides={1,1}\n"
            "  %2 = f32[2,2] logistic(%1)\n"
            "  %3 = f32[2,2] slice(%0), starts={0,4}, limits={2,6}, strides={1,1}\n"
            "  %4 = f32[2,2] tanh(%3)\n"
            "  %5 = f32[2,2] mul(%2, %4)\n"
            "  %6 = f32[2,2] slice(%0), starts={0,2}, limits={2,4}, strides={1,1}\n"
            "  %7 = f32[2,2] logistic(%6)\n"
            "  %8 = f32[2,2] slice(%0), starts={0,6}, limits={2,8}, strides={1,1}\n"
            "  %9 = f32[2,2] mul(%7, %8)\n"
            "  %10 = f32[2,2] add(%5, %9)\n"
            "  outputs(%10)\n"
            "}\n"
            "entry {\n"
            "  %0 = f32[2,8] parameter(0) \"x\"\n"
            "  %1 = f32[2,8] parameter(1) \"h\"\n"
            "  %2 = f32[2,8] add(%0, %1)\n"
            "  %3 = f32[2,2] fusion(%2), kind=loop, calls=loop_fusion.0\n"
            "  %4 = f32[2,2] slice(%2), starts={0,6}, limits={2,8}, strides={1,1}\n"
            "  outputs(%3, %4)\n"
            "}\n");
}

}  // namespace
}  // namespace kiln::compiler
