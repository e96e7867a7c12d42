#include "kiln/compiler/passes/output_fusion.h"

#include <gtest/gtest.h>

#include "kiln/ir/builder.h"
#include "tests/compiler/test_target.h"

namespace kiln::compiler {
namespace {

using ir::Instruction;
using ir::Opcode;
using testing::run_and_print;

const ir::DotDims kMatmul{.lhs_batch = {}, .rhs_batch = {}, .lhs_contracting = {1}, .rhs_contracting = {0}};

// dense: relu(x @ w + broadcast(b))
struct Dense {
  ir::Module m{"dense"};
  ir::Builder b{m.entry()};
  Instruction* x = b.parameter(Shape(DType::kF32, {8, 4}), "x");
  Instruction* w = b.parameter(Shape(DType::kF32, {4, 3}), "w");
  Instruction* bias = b.parameter(Shape(DType::kF32, {3}), "b");
  Instruction* dot = b.dot_general(x, w, kMatmul);
  Instruction* biased = b.binary(Opcode::kAdd, dot, b.broadcast_in_dim(bias, {8, 3}, {1}));
};

TEST(OutputFusionPassTest, FusesBiasAndReluIntoTheMatmul) {
  Dense d;
  auto* relu = d.b.binary(Opcode::kMax, d.biased, d.b.full(d.biased->shape(), 0));
  d.m.entry()->set_outputs({relu});
  EXPECT_EQ(ir::to_string(d.m),
            "module @dense\n"
            "entry {\n"
            "  %0 = f32[8,4] parameter(0) \"x\"\n"
            "  %1 = f32[4,3] parameter(1) \"w\"\n"
            "  %2 = f32[3] parameter(2) \"b\"\n"
            "  %3 = f32[8,3] dot_general(%0, %1), lhs_contracting={1}, rhs_contracting={0}\n"
            "  %4 = f32[8,3] broadcast_in_dim(%2), dims={1}\n"
            "  %5 = f32[8,3] add(%3, %4)\n"
            "  %6 = f32[] constant(0)\n"
            "  %7 = f32[8,3] broadcast_in_dim(%6), dims={}\n"
            "  %8 = f32[8,3] max(%5, %7)\n"
            "  outputs(%8)\n"
            "}\n");
  OutputFusionPass pass;
  EXPECT_EQ(run_and_print(pass, d.m),
            "module @dense\n"
            "output_fusion.0 {\n"
            "  %0 = f32[8,4] parameter(0)\n"
            "  %1 = f32[4,3] parameter(1)\n"
            "  %2 = f32[3] parameter(2)\n"
            "  %3 = f32[8,3] dot_general(%0, %1), lhs_contracting={1}, rhs_contracting={0}\n"
            "  %4 = f32[8,3] broadcast_in_dim(%2), dims={1}\n"
            "  %5 = f32[8,3] add(%3, %4)\n"
            "  %6 = f32[] constant(0)\n"
            "  %7 = f32[8,3] broadcast_in_dim(%6), dims={}\n"
            "  %8 = f32[8,3] max(%5, %7)\n"
            "  outputs(%8)\n"
            "}\n"
            "entry {\n"
            "  %0 = f32[8,4] parameter(0) \"x\"\n"
            "  %1 = f32[4,3] parameter(1) \"w\"\n"
            "  %2 = f32[3] parameter(2) \"b\"\n"
            "  %3 = f32[8,3] fusion(%0, %1, %2), kind=output, calls=output_fusion.0\n"
            "  outputs(%3)\n"
            "}\n");
  auto info = match_output_fusion(*d.m.computations()[1]);
  ASSERT_TRUE(info.has_value());
  EXPECT_TRUE(info->has_bias);
  EXPECT_EQ(info->activation, EpilogueActivation::kRelu);
  EXPECT_EQ(info->contraction->opcode(), Opcode::kDotGeneral);
}

TEST(OutputFusionPassTest, RecognizesSelectReluAndBiasFreeActivations) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {2, 4}), "x");
  auto* w = b.parameter(Shape(DType::kF32, {4, 4}), "w");
  auto* dot = b.dot_general(x, w, kMatmul);
  auto* zero = b.full(dot->shape(), 0);
  auto* relu = b.select(b.compare(ir::Comparison::kGt, dot, zero), dot, zero);
  auto* dot2 = b.dot_general(relu, w, kMatmul);
  m.entry()->set_outputs({b.unary(Opcode::kTanh, dot2)});
  OutputFusionPass pass;
  pass.run(m);
  ASSERT_EQ(m.computations().size(), 3u);
  auto first = match_output_fusion(*m.computations()[1]);
  auto second = match_output_fusion(*m.computations()[2]);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->activation, EpilogueActivation::kRelu);
  EXPECT_FALSE(first->has_bias);
  EXPECT_EQ(second->activation, EpilogueActivation::kTanh);
  EXPECT_EQ(ir::to_string(*m.entry()),
            "entry {\n"
            "  %0 = f32[2,4] parameter(0) \"x\"\n"
            "  %1 = f32[4,4] parameter(1) \"w\"\n"
            "  %2 = f32[2,4] fusion(%0, %1), kind=output, calls=output_fusion.0\n"
            "  %3 = f32[2,4] fusion(%2, %1), kind=output, calls=output_fusion.1\n"
            "  outputs(%3)\n"
            "}\n");
}

TEST(OutputFusionPassTest, DoesNotFuseWhenTheMatmulResultIsReadElsewhere) {
  Dense d;
  auto* relu = d.b.binary(Opcode::kMax, d.biased, d.b.full(d.biased->shape(), 0));
  d.m.entry()->set_outputs({relu, d.dot});  // the raw matmul is an output too
  OutputFusionPass pass;
  std::string before = ir::to_string(d.m);
  bool changed = true;
  EXPECT_EQ(run_and_print(pass, d.m, &changed), before);
  EXPECT_FALSE(changed);
  ASSERT_EQ(pass.notes().size(), 1u);
  EXPECT_NE(pass.notes()[0].find("is an output"), std::string::npos) << pass.notes()[0];
}

TEST(OutputFusionPassTest, StopsAtTheBiasWhenTheBiasedValueHasOtherUsers) {
  Dense d;
  auto* relu = d.b.binary(Opcode::kMax, d.biased, d.b.full(d.biased->shape(), 0));
  d.m.entry()->set_outputs({relu, d.biased});
  OutputFusionPass pass;
  pass.run(d.m);
  EXPECT_EQ(ir::to_string(*d.m.entry()),
            "entry {\n"
            "  %0 = f32[8,4] parameter(0) \"x\"\n"
            "  %1 = f32[4,3] parameter(1) \"w\"\n"
            "  %2 = f32[3] parameter(2) \"b\"\n"
            "  %3 = f32[8,3] fusion(%0, %1, %2), kind=output, calls=output_fusion.0\n"
            "  %4 = f32[] constant(0)\n"
            "  %5 = f32[8,3] broadcast_in_dim(%4), dims={}\n"
            "  %6 = f32[8,3] max(%3, %5)\n"
            "  outputs(%6, %3)\n"
            "}\n");
  auto info = match_output_fusion(*d.m.computations()[1]);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->activation, EpilogueActivation::kNone);
}

TEST(OutputFusionPassTest, RespectsTheTarget) {
  class Target final : public TargetInfo {
   public:
    std::string name() const override { return "t"; }
    Decision supports(const ir::Instruction&) const override { return Decision::yes(); }
    int64_t memory_limit_bytes() const override { return 1 << 20; }
    bool wants_output_fusion() const override { return false; }
  } target;
  Dense d;
  d.m.entry()->set_outputs({d.biased});
  OutputFusionPass pass(&target);
  EXPECT_FALSE(pass.run(d.m));
}

}  // namespace
}  // namespace kiln::compiler
