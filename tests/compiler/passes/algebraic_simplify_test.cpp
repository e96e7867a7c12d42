#include "kiln/compiler/passes/algebraic_simplify.h"

#include <gtest/gtest.h>

#include "kiln/ir/builder.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/reference_eval.h"
#include "tests/compiler/test_target.h"

namespace kiln::compiler {
namespace {

using ir::Opcode;
using testing::run_and_print;

TEST(AlgebraicSimplifyPassTest, RemovesAdditiveAndMultiplicativeIdentities) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {4}), "x");
  auto* zero = b.full(x->shape(), 0);
  auto* one = b.full(x->shape(), 1);
  auto* a = b.binary(Opcode::kAdd, x, zero);    // x + 0
  auto* s = b.binary(Opcode::kSub, a, zero);    // x - 0
  auto* p = b.binary(Opcode::kMul, one, s);     // 1 * x
  auto* d = b.binary(Opcode::kDiv, p, one);     // x / 1
  auto* e = b.unary(Opcode::kExp, d);
  m.entry()->set_outputs({e});
  EXPECT_EQ(ir::to_string(m),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[4] parameter(0) \"x\"\n"
            "  %1 = f32[] constant(1)\n"
            "  %2 = f32[4] broadcast_in_dim(%1), dims={}\n"
            "  %3 = f32[] constant(0)\n"
            "  %4 = f32[4] broadcast_in_dim(%3), dims={}\n"
            "  %5 = f32[4] add(%0, %4)\n"
            "  %6 = f32[4] sub(%5, %4)\n"
            "  %7 = f32[4] mul(%2, %6)\n"
            "  %8 = f32[4] div(%7, %2)\n"
            "  %9 = f32[4] exp(%8)\n"
            "  outputs(%9)\n"
            "}\n");
  AlgebraicSimplifyPass pass;
  bool changed = false;
  EXPECT_EQ(run_and_print(pass, m, &changed),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[4] parameter(0) \"x\"\n"
            "  %1 = f32[4] exp(%0)\n"
            "  outputs(%1)\n"
            "}\n");
  EXPECT_TRUE(changed);
  EXPECT_EQ(pass.notes().size(), 4u);
}

TEST(AlgebraicSimplifyPassTest, FoldsTimesZeroForIntegersOnly) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* i = b.parameter(Shape(DType::kI32, {3}), "i");
  auto* f = b.parameter(Shape(DType::kF32, {3}), "f");
  auto* iz = b.binary(Opcode::kMul, i, b.full(i->shape(), 0));  // x * 0 -> 0
  auto* fz = b.binary(Opcode::kMul, f, b.full(f->shape(), 0));  // kept: NaN * 0 = NaN
  m.entry()->set_outputs({iz, fz});
  AlgebraicSimplifyPass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "entry {\n"
            "  %0 = i32[3] parameter(0) \"i\"\n"
            "  %1 = f32[3] parameter(1) \"f\"\n"
            "  %2 = i32[] constant(0)\n"
            "  %3 = i32[3] broadcast_in_dim(%2), dims={}\n"
            "  %4 = f32[] constant(0)\n"
            "  %5 = f32[3] broadcast_in_dim(%4), dims={}\n"
            "  %6 = f32[3] mul(%1, %5)\n"
            "  outputs(%3, %6)\n"
            "}\n");
}

TEST(AlgebraicSimplifyPassTest, CancelsDoubleNegationAndNoOpShapeOps) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {2, 3}), "x");
  auto* n = b.unary(Opcode::kNeg, b.unary(Opcode::kNeg, x));          // neg(neg(x)) -> x
  auto* r = b.reshape(n, {2, 3});                                      // same shape -> x
  auto* t = b.transpose(r, {0, 1});                                    // identity -> x
  auto* bc = b.broadcast_in_dim(t, {2, 3}, {0, 1});                    // same shape -> x
  auto* c = b.convert(bc, DType::kF32);                                // same dtype -> x
  auto* y = b.unary(Opcode::kTanh, c);
  m.entry()->set_outputs({y});
  AlgebraicSimplifyPass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[2,3] parameter(0) \"x\"\n"
            "  %1 = f32[2,3] tanh(%0)\n"
            "  outputs(%1)\n"
            "}\n");
}

TEST(AlgebraicSimplifyPassTest, ComposesReshapesAndTransposes) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {2, 3, 4}), "x");
  auto* r = b.reshape(b.reshape(x, {6, 4}), {24});          // -> reshape(x, {24})
  auto* t = b.transpose(b.transpose(x, {1, 2, 0}), {1, 2, 0});  // -> transpose(x, {2, 0, 1})
  auto* back = b.transpose(b.transpose(x, {1, 0, 2}), {1, 0, 2});  // -> x
  m.entry()->set_outputs({r, t, back});
  AlgebraicSimplifyPass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[2,3,4] parameter(0) \"x\"\n"
            "  %1 = f32[24] reshape(%0)\n"
            "  %2 = f32[4,2,3] transpose(%0), permutation={2,0,1}\n"
            "  outputs(%1, %2, %0)\n"
            "}\n");
}

TEST(AlgebraicSimplifyPassTest, PicksTheBranchOfASelectWithAConstantPredicate) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {3}), "x");
  auto* y = b.parameter(Shape(DType::kF32, {3}), "y");
  auto* yes = b.full(Shape(DType::kBool, {3}), 1);
  auto* no = b.full(Shape(DType::kBool, {3}), 0);
  m.entry()->set_outputs({b.select(yes, x, y), b.select(no, x, y)});
  AlgebraicSimplifyPass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[3] parameter(0) \"x\"\n"
            "  %1 = f32[3] parameter(1) \"y\"\n"
            "  outputs(%0, %1)\n"
            "}\n");
}

// x [4, 12] = the sum of a, b, c ([4, 3] each) padded with zeros to columns 0, 3 and 9 (6..9
// left zero): the gradient of slicing x into gates, one pad per slice.
struct PaddedPieces {
  ir::Module m{"m"};
  ir::Builder b{m.entry()};
  std::vector<ir::Instruction*> ps;
  explicit PaddedPieces(const std::vector<int64_t>& lows, double value = 0) {
    ir::Instruction* sum = nullptr;
    for (int64_t low : lows) {
      ps.push_back(b.parameter(Shape(DType::kF32, {4, 3}), ""));
      ir::Instruction* padded = b.pad(ps.back(), {0, low}, {0, 12 - 3 - low}, value);
      sum = sum == nullptr ? padded : b.binary(Opcode::kAdd, sum, padded);
    }
    m.entry()->set_outputs({b.unary(Opcode::kExp, sum)});
  }
  std::vector<HostTensor> evaluate() const {
    std::vector<HostTensor> args;
    for (size_t i = 0; i < ps.size(); ++i) {
      HostTensor t(Shape(DType::kF32, {4, 3}));
      for (int64_t k = 0; k < 12; ++k) t.data<float>()[static_cast<size_t>(k)] = 0.25f * static_cast<float>(k) - static_cast<float>(i);
      args.push_back(std::move(t));
    }
    return ir::evaluate(m, args);
  }
};

TEST(AlgebraicSimplifyPassTest, ASumOfZeroPaddedPiecesBecomesOneConcatenate) {
  PaddedPieces p({9, 0, 3});  // added out of order: the concatenate sorts them by column
  const std::vector<HostTensor> before = p.evaluate();
  AlgebraicSimplifyPass pass;
  EXPECT_EQ(run_and_print(pass, p.m),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[4,3] parameter(0)\n"
            "  %1 = f32[4,3] parameter(1)\n"
            "  %2 = f32[4,3] parameter(2)\n"
            "  %3 = f32[] constant(0)\n"
            "  %4 = f32[4,3] broadcast_in_dim(%3), dims={}\n"
            "  %5 = f32[4,12] concatenate(%1, %2, %4, %0), axis=1\n"
            "  %6 = f32[4,12] exp(%5)\n"
            "  outputs(%6)\n"
            "}\n");
  const std::vector<HostTensor> after = p.evaluate();
  EXPECT_EQ(after[0].to_vector<float>(), before[0].to_vector<float>());
}

TEST(AlgebraicSimplifyPassTest, APaddedSumInsideALargerSumStillBecomesAConcatenate) {
  // (pad(a) + pad(b)) + y: the enclosing add also sums y, so the padded pieces' own add is the
  // root that becomes one concatenate.
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* a = b.parameter(Shape(DType::kF32, {2, 3}), "a");
  auto* c = b.parameter(Shape(DType::kF32, {2, 3}), "c");
  auto* y = b.parameter(Shape(DType::kF32, {2, 6}), "y");
  auto* pieces = b.binary(Opcode::kAdd, b.pad(a, {0, 0}, {0, 3}, 0), b.pad(c, {0, 3}, {0, 0}, 0));
  m.entry()->set_outputs({b.binary(Opcode::kAdd, pieces, y)});
  std::vector<HostTensor> args;
  for (const Shape& s : {a->shape(), c->shape(), y->shape()}) {
    HostTensor t(s);
    for (int64_t k = 0; k < s.num_elements(); ++k)
      t.data<float>()[static_cast<size_t>(k)] = 0.5f * static_cast<float>(k) - static_cast<float>(args.size());
    args.push_back(std::move(t));
  }
  const std::vector<HostTensor> before = ir::evaluate(m, args);
  AlgebraicSimplifyPass pass;
  const std::string after_pass = run_and_print(pass, m);
  EXPECT_NE(after_pass.find("concatenate(%0, %1), axis=1"), std::string::npos) << after_pass;
  EXPECT_EQ(after_pass.find("pad"), std::string::npos) << after_pass;
  EXPECT_EQ(ir::evaluate(m, args)[0].to_vector<float>(), before[0].to_vector<float>());
}

TEST(AlgebraicSimplifyPassTest, LeavesOverlappingOrNonZeroPaddedPiecesAlone) {
  for (auto [lows, value] : {std::pair{std::vector<int64_t>{0, 2}, 0.0}, std::pair{std::vector<int64_t>{0, 3}, 1.0}}) {
    PaddedPieces p(lows, value);
    AlgebraicSimplifyPass pass;
    bool changed = true;
    run_and_print(pass, p.m, &changed);
    EXPECT_FALSE(changed) << ir::to_string(p.m);
  }
}

TEST(AlgebraicSimplifyPassTest, SlicesOfAnElementwiseOpSliceItsOperandsInstead) {
  // z = x + y read only by its two halves: each half adds the halves of x and y, bit for bit.
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {2, 4}), "x");
  auto* y = b.parameter(Shape(DType::kF32, {2, 4}), "y");
  auto* z = b.binary(Opcode::kAdd, x, y);
  m.entry()->set_outputs({b.slice(z, {0, 0}, {2, 2}, {1, 1}), b.unary(Opcode::kExp, b.slice(z, {0, 2}, {2, 4}, {1, 1}))});
  std::vector<HostTensor> args = {HostTensor::from_vector<float>({2, 4}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f}),
                                  HostTensor::from_vector<float>({2, 4}, {1.5f, -2.25f, 3, 4, 5, 6, 7, 8})};
  const std::vector<HostTensor> before = ir::evaluate(m, args);
  AlgebraicSimplifyPass pass;
  EXPECT_EQ(run_and_print(pass, m),
            "module @m\n"
            "entry {\n"
            "  %0 = f32[2,4] parameter(0) \"x\"\n"
            "  %1 = f32[2,4] parameter(1) \"y\"\n"
            "  %2 = f32[2,2] slice(%0), starts={0,0}, limits={2,2}, strides={1,1}\n"
            "  %3 = f32[2,2] slice(%1), starts={0,0}, limits={2,2}, strides={1,1}\n"
            "  %4 = f32[2,2] add(%2, %3)\n"
            "  %5 = f32[2,2] slice(%0), starts={0,2}, limits={2,4}, strides={1,1}\n"
            "  %6 = f32[2,2] slice(%1), starts={0,2}, limits={2,4}, strides={1,1}\n"
            "  %7 = f32[2,2] add(%5, %6)\n"
            "  %8 = f32[2,2] exp(%7)\n"
            "  outputs(%4, %8)\n"
            "}\n");
  const std::vector<HostTensor> after = ir::evaluate(m, args);
  for (size_t k = 0; k < 2; ++k) EXPECT_EQ(after[k].to_vector<float>(), before[k].to_vector<float>());
}

TEST(AlgebraicSimplifyPassTest, KeepsAnElementwiseOpReadWholeSlicedTwiceOverOrOverABroadcast) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {4}), "x");
  auto* e = b.unary(Opcode::kExp, x);
  auto* f = b.unary(Opcode::kLog, x);
  auto* biased = b.binary(Opcode::kAdd, x, b.broadcast_in_dim(b.parameter(Shape(DType::kF32, {}), "b"), {4}, {}));
  m.entry()->set_outputs({b.slice(e, {0}, {2}, {1}), e,  // e is also read whole
                          b.slice(f, {0}, {3}, {1}), b.slice(f, {1}, {4}, {1}),  // 6 > 4 elements
                          b.slice(biased, {0}, {2}, {1})});  // a bias epilogue stays whole
  AlgebraicSimplifyPass pass;
  bool changed = true;
  run_and_print(pass, m, &changed);
  EXPECT_FALSE(changed) << ir::to_string(m);
}

TEST(AlgebraicSimplifyPassTest, LeavesNonIdentitiesAlone) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {3}), "x");
  m.entry()->set_outputs({b.binary(Opcode::kAdd, x, b.full(x->shape(), 2))});
  AlgebraicSimplifyPass pass;
  bool changed = true;
  run_and_print(pass, m, &changed);
  EXPECT_FALSE(changed);
}

}  // namespace
}  // namespace kiln::compiler
