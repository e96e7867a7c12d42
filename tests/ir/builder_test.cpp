#include "kiln/ir/builder.h"

#include <gtest/gtest.h>

#include "kiln/ir/module.h"
#include "tests/testing/expect_error.h"

namespace kiln::ir {
namespace {

TEST(BuilderTest, BuildsADenseLayerWithUsersAndOrder) {
  Module m("dense");
  Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {8, 4}), "x");
  auto* w = b.parameter(Shape(DType::kF32, {4, 3}), "w");
  auto* y = b.dot_general(x, w, {.lhs_contracting = {1}, .rhs_contracting = {0}});
  auto* r = b.binary(Opcode::kMax, y, b.full(y->shape(), 0.0));
  m.entry()->add_output(r);
  EXPECT_EQ(y->shape(), Shape(DType::kF32, {8, 3}));
  ASSERT_EQ(x->users().size(), 1u);
  EXPECT_EQ(x->users()[0], y);
  auto order = m.entry()->post_order();
  EXPECT_EQ(order.front(), x);
  EXPECT_EQ(order.back(), r);
}

TEST(BuilderTest, TagsInstructionsWithTheSource) {
  Module m("m");
  Builder b(m.entry());
  b.set_source("dense_1");
  auto* x = b.parameter(Shape(DType::kF32, {2}), "x");
  auto* e = b.unary(Opcode::kExp, x);
  EXPECT_EQ(e->source(), "dense_1");
}

TEST(BuilderTest, ErrorsNameTheSourceAndOp) {
  Module m("m");
  Builder b(m.entry());
  b.set_source("dense_1");
  auto* x = b.parameter(Shape(DType::kF32, {32, 28, 28}), "x");
  auto* w = b.parameter(Shape(DType::kF32, {784, 128}), "w");
  KILN_EXPECT_ERROR(b.dot_general(x, w, {.lhs_contracting = {2}, .rhs_contracting = {0}}), ShapeError,
                    "[dense_1/dot_general] contracting dims differ: f32[32,28,28] dim 2 is 28");
}

TEST(BuilderTest, ReplaceAllUsesAndRemoveDead) {
  Module m("m");
  Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {2}), "x");
  auto* e = b.unary(Opcode::kExp, x);
  auto* n = b.unary(Opcode::kNeg, e);
  m.entry()->add_output(n);
  auto* t = b.unary(Opcode::kTanh, x);
  m.entry()->replace_all_uses(e, t);
  EXPECT_EQ(n->operand(0), t);
  EXPECT_TRUE(e->users().empty());
  EXPECT_EQ(m.entry()->remove_dead(), 1);
  EXPECT_EQ(m.entry()->instructions().size(), 3u);
  EXPECT_EQ(x->users().size(), 1u);
}

}  // namespace
}  // namespace kiln::ir
