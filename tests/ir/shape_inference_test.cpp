#include "kiln/ir/shape_inference.h"

#include <gtest/gtest.h>

#include "kiln/ir/builder.h"
#include "kiln/ir/module.h"
#include "tests/testing/expect_error.h"

namespace kiln::ir {
namespace {

class ShapeInferenceTest : public ::testing::Test {
 protected:
  Instruction* param(DType t, Dims d) { return b_.parameter(Shape(t, std::move(d)), "p"); }
  Module m_{"m"};
  Builder b_{m_.entry()};
};

TEST_F(ShapeInferenceTest, ElementwiseNeedsEqualShapesAndDtypes) {
  auto* a = param(DType::kF32, {2, 3});
  KILN_EXPECT_ERROR(b_.binary(Opcode::kAdd, a, param(DType::kF32, {3})), ShapeError,
                    "operands must have equal dims: received f32[2,3] and f32[3]");
  KILN_EXPECT_ERROR(b_.binary(Opcode::kAdd, a, param(DType::kBF16, {2, 3})), DTypeError, "convert");
  KILN_EXPECT_ERROR(b_.unary(Opcode::kExp, param(DType::kI32, {2})), DTypeError, "floating-point");
  EXPECT_EQ(b_.compare(Comparison::kLt, a, a)->shape(), Shape(DType::kBool, {2, 3}));
}

TEST_F(ShapeInferenceTest, BroadcastChecksTheDimMap) {
  auto* v = param(DType::kF32, {3});
  EXPECT_EQ(b_.broadcast_in_dim(v, {2, 3}, {1})->shape(), Shape(DType::kF32, {2, 3}));
  KILN_EXPECT_ERROR(b_.broadcast_in_dim(v, {3, 2}, {1}), ShapeError, "cannot broadcast f32[3] to f32[3,2]");
}

TEST_F(ShapeInferenceTest, ReduceRemovesAxesAndArgmaxGivesI32) {
  auto* a = param(DType::kF32, {4, 5, 6});
  EXPECT_EQ(b_.reduce(Opcode::kReduceSum, a, {0, 2})->shape(), Shape(DType::kF32, {5}));
  EXPECT_EQ(b_.argmax(a, 2)->shape(), Shape(DType::kI32, {4, 5}));
  KILN_EXPECT_ERROR(b_.reduce(Opcode::kReduceSum, a, {3}), ShapeError, "reduction axes [3] are invalid for rank 3");
}

TEST_F(ShapeInferenceTest, DotGeneralOrdersBatchThenFreeDims) {
  auto* l = param(DType::kF32, {7, 2, 3});
  auto* r = param(DType::kF32, {7, 3, 5});
  auto* d = b_.dot_general(l, r, {.lhs_batch = {0}, .rhs_batch = {0}, .lhs_contracting = {2},
                                  .rhs_contracting = {1}});
  EXPECT_EQ(d->shape(), Shape(DType::kF32, {7, 2, 5}));
}

TEST_F(ShapeInferenceTest, SliceConcatPadTransposeReshape) {
  auto* a = param(DType::kF32, {4, 6});
  EXPECT_EQ(b_.slice(a, {1, 0}, {3, 6}, {1, 2})->shape(), Shape(DType::kF32, {2, 3}));
  EXPECT_EQ(b_.concatenate({a, a}, 1)->shape(), Shape(DType::kF32, {4, 12}));
  EXPECT_EQ(b_.pad(a, {1, 0}, {0, 2}, 0.0)->shape(), Shape(DType::kF32, {5, 8}));
  EXPECT_EQ(b_.transpose(a, {1, 0})->shape(), Shape(DType::kF32, {6, 4}));
  KILN_EXPECT_ERROR(b_.reshape(a, {5, 5}), ShapeError, "cannot reshape f32[4,6] (24 elements)");
}

TEST_F(ShapeInferenceTest, GatherAndScatterAdd) {
  auto* table = param(DType::kF32, {100, 16});
  auto* ids = param(DType::kI32, {8, 4});
  auto* g = b_.gather(table, ids, 0);
  EXPECT_EQ(g->shape(), Shape(DType::kF32, {8, 4, 16}));
  EXPECT_EQ(b_.scatter_add(table, ids, g, 0)->shape(), table->shape());
  KILN_EXPECT_ERROR(b_.gather(table, param(DType::kF32, {3}), 0), DTypeError, "indices must be i32 or i64");
}

TEST_F(ShapeInferenceTest, ConvolutionAndPooling) {
  auto* x = param(DType::kF32, {2, 28, 28, 1});
  auto* w = param(DType::kF32, {3, 3, 1, 32});
  auto* y = b_.convolution(x, w, {});
  EXPECT_EQ(y->shape(), Shape(DType::kF32, {2, 26, 26, 32}));
  auto* p = b_.reduce_window(y, ReduceKind::kMax, {{1, 2, 2, 1}, {1, 2, 2, 1}, {0, 0, 0, 0}, {0, 0, 0, 0}});
  EXPECT_EQ(p->shape(), Shape(DType::kF32, {2, 13, 13, 32}));
  EXPECT_EQ(b_.conv_backward_input(y, w, x->shape(), {})->shape(), x->shape());
  EXPECT_EQ(b_.conv_backward_filter(x, y, w->shape(), {})->shape(), w->shape());
  ConvDims same{.strides = {2, 2}, .padding_low = {1, 1}, .padding_high = {1, 1}};
  EXPECT_EQ(b_.convolution(x, w, same)->shape(), Shape(DType::kF32, {2, 14, 14, 32}));
  KILN_EXPECT_ERROR(b_.convolution(x, param(DType::kF32, {3, 3, 2, 8}), {}), ShapeError,
                    "input channels 1 must equal filter in-channels 2");
}

TEST_F(ShapeInferenceTest, ArityIsChecked) {
  Shape s(DType::kF32, {2});
  KILN_EXPECT_ERROR(infer_shape(Opcode::kAdd, std::vector<Shape>{s}, {}, nullptr), ShapeError,
                    "expects 2 operands, received 1");
}

}  // namespace
}  // namespace kiln::ir
