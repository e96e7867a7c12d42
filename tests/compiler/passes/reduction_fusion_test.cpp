#include "kiln/compiler/passes/reduction_fusion.h"

#include <gtest/gtest.h>

#include "kiln/ir/builder.h"
#include "tests/compiler/test_target.h"

namespace kiln::compiler {
namespace {

using ir::Opcode;
using testing::run_and_print;

TEST(ReductionFusionPassTest, InlinesTheElementwiseProducersOfAReduce) {
  // sum((x - broadcast(m))^2 over axis 1), the variance numerator.
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {4, 8}), "x");
  auto* mean = b.parameter(Shape(DType::kF32, {4}), "mean");
  auto* d = b.binary(Opcode::kSub, x, b.broadcast_in_dim(mean, {4, 8}, {0}));
  auto* sq = b.binary(Opcode::kMul, d, d);
  m.entry()->set_outputs({b.reduce(Opcode::kReduceSum, sq, {1})});
  EXPECT_EQ(ir::to_string(m),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[4,8] parameter(0) \"x\"\n"
            "  %1 = f32[4] parameter(1) \"mean\"\n"
            "  %2 = f32[4,8] broadcast_in_dim(%1), dims={0}\n"
            "  %3 = f32[4,8] sub(%0, %2)\n"
            "  %4 = f32[4,8] mul(%3, %3)\n"
            "  %5 = f32[4] reduce_sum(%4), axes={1}\n"
            "  outputs(%5)\n"
            "}\n");
  ReductionFusionPass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "reduction_fusion.0 {\n"
            "  %0 = f32[4,8] parameter(0)\n"
            "  %1 = f32[4] parameter(1)\n"
            "  %2 = f32[4,8] broadcast_in_dim(%1), dims={0}\n"
            "  %3 = f32[4,8] sub(%0, %2)\n"
            "  %4 = f32[4,8] mul(%3, %3)\n"
            "  %5 = f32[4] reduce_sum(%4), axes={1}\n"
            "  outputs(%5)\n"
            "}\n"
            "entry {\n"
            "  %0 = f32[4,8] parameter(0) \"x\"\n"
            "  %1 = f32[4] parameter(1) \"mean\"\n"
            "  %2 = f32[4] fusion(%0, %1), kind=reduction, calls=reduction_fusion.0\n"
            "  outputs(%2)\n"
            "}\n");
}

TEST(ReductionFusionPassTest, LeavesProducersWithOtherUsersOutside) {
  // softmax denominator: exp(x) also feeds the division, so it stays outside.
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {2, 5}), "x");
  auto* e = b.unary(Opcode::kExp, x);
  auto* s = b.reduce(Opcode::kReduceSum, e, {1});
  auto* p = b.binary(Opcode::kDiv, e, b.broadcast_in_dim(s, {2, 5}, {0}));
  auto* l = b.unary(Opcode::kLog, x);
  auto* r = b.reduce(Opcode::kReduceMax, b.convert(l, DType::kF32), {0, 1});  // convert kept by design
  m.entry()->set_outputs({p, r});
  ReductionFusionPass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "reduction_fusion.0 {\n"
            "  %0 = f32[2,5] parameter(0)\n"
            "  %1 = f32[2,5] log(%0)\n"
            "  %2 = f32[2,5] convert(%1)\n"
            "  %3 = f32[] reduce_max(%2), axes={0,1}\n"
            "  outputs(%3)\n"
            "}\n"
            "entry {\n"
            "  %0 = f32[2,5] parameter(0) \"x\"\n"
            "  %1 = f32[2,5] exp(%0)\n"
            "  %2 = f32[2] reduce_sum(%1), axes={1}\n"
            "  %3 = f32[2,5] broadcast_in_dim(%2), dims={0}\n"
            "  %4 = f32[2,5] div(%1, %3)\n"
            "  %5 = f32[] fusion(%0), kind=reduction, calls=reduction_fusion.0\n"
            "  outputs(%4, %5)\n"
            "}\n");
  ASSERT_EQ(pass.notes().size(), 2u);
  EXPECT_NE(pass.notes()[0].find("not fused reduce_sum"), std::string::npos) << pass.notes()[0];
}

}  // namespace
}  // namespace kiln::compiler
