#include "kiln/compiler/passes/constant_folding.h"

#include <gtest/gtest.h>

#include "kiln/ir/builder.h"
#include "tests/compiler/test_target.h"

namespace kiln::compiler {
namespace {

using ir::Opcode;
using testing::run_and_print;

TEST(ConstantFoldingPassTest, FoldsSmallConstantExpressions) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {3}), "x");
  auto* c = b.constant(HostTensor::from_vector<float>({3}, {1, 2, 3}));
  auto* d = b.constant(HostTensor::from_vector<float>({3}, {10, 20, 30}));
  auto* sum = b.binary(Opcode::kAdd, c, d);
  auto* total = b.reduce(Opcode::kReduceSum, sum, {0});
  m.entry()->set_outputs({b.binary(Opcode::kMul, x, sum), total});
  EXPECT_EQ(ir::to_string(m),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[3] parameter(0) \"x\"\n"
            "  %1 = f32[3] constant({1, 2, 3})\n"
            "  %2 = f32[3] constant({10, 20, 30})\n"
            "  %3 = f32[3] add(%1, %2)\n"
            "  %4 = f32[3] mul(%0, %3)\n"
            "  %5 = f32[] reduce_sum(%3), axes={0}\n"
            "  outputs(%4, %5)\n"
            "}\n");
  ConstantFoldingPass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[3] parameter(0) \"x\"\n"
            "  %1 = f32[3] constant({11, 22, 33})\n"
            "  %2 = f32[3] mul(%0, %1)\n"
            "  %3 = f32[] constant(66)\n"
            "  outputs(%2, %3)\n"
            "}\n");
}

TEST(ConstantFoldingPassTest, KeepsBroadcastScalarsAsBroadcasts) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {64, 64}), "x");
  auto* two = b.full(x->shape(), 2);
  auto* three = b.full(x->shape(), 3);
  auto* six = b.binary(Opcode::kMul, two, three);  // -> broadcast(6), not a 4096-element literal
  m.entry()->set_outputs({b.binary(Opcode::kAdd, x, six)});
  ConstantFoldingPass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[64,64] parameter(0) \"x\"\n"
            "  %1 = f32[] constant(6)\n"
            "  %2 = f32[64,64] broadcast_in_dim(%1), dims={}\n"
            "  %3 = f32[64,64] add(%0, %2)\n"
            "  outputs(%3)\n"
            "}\n");
}

TEST(ConstantFoldingPassTest, NeverFoldsRandomBitsOrLargeResults) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* key = b.constant(HostTensor::scalar<int64_t>(7));
  auto* bits = b.rng_bits(key, {4});
  auto* big = b.constant(HostTensor::zeros(Shape(DType::kF32, {2000})));
  auto* neg = b.unary(Opcode::kNeg, big);  // 2000 elements > 1024: kept
  m.entry()->set_outputs({bits, neg});
  ConstantFoldingPass pass;
  bool changed = true;
  std::string before = ir::to_string(m);
  EXPECT_EQ(run_and_print(pass, m, &changed), before);
  EXPECT_FALSE(changed);
  ASSERT_EQ(pass.notes().size(), 1u);
  EXPECT_NE(pass.notes()[0].find("2000 elements"), std::string::npos) << pass.notes()[0];
}

}  // namespace
}  // namespace kiln::compiler
