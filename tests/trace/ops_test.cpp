// Forward values of the trace ops (run eagerly on the reference backend): broadcasting and
// scalars, reductions, stable softmax/cross-entropy, one_hot, random ops, errors with sources.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/random.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"
#include "kiln/trace/trace_context.h"
#include "tests/testing/expect_error.h"

namespace kiln {
namespace {

Tensor f32(Dims dims, std::vector<float> v) { return Tensor::from_vector<float>(std::move(dims), v); }

TEST(OpsTest, BroadcastingFollowsNumPyAndScalarsAdoptTheDtype) {
  Tensor a = f32({2, 1}, {1, 2});
  Tensor b = f32({3}, {10, 20, 30});
  Tensor c = a + b;
  EXPECT_EQ(c.shape(), Shape(DType::kF32, {2, 3}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{11, 21, 31, 12, 22, 32}));
  Tensor i = Tensor::from_vector<int32_t>({2}, {3, 4}) * 2.0;
  EXPECT_EQ(i.dtype(), DType::kI32);
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{6, 8}));
  EXPECT_EQ((Tensor::from_vector<int32_t>({1}, {1}) + f32({1}, {0.5f})).dtype(), DType::kF32);
  KILN_EXPECT_ERROR(f32({2}, {1, 2}) + b, ShapeError, "cannot broadcast [2] with [3]");
  // A dim of 1 stretches to 0 as to any size: a bias over an empty batch (a replica's share of
  // a partial batch) stays empty.
  Tensor empty = Tensor(HostTensor(Shape(DType::kF32, {0, 3}))) + b;
  EXPECT_EQ(empty.shape(), Shape(DType::kF32, {0, 3}));
}

TEST(OpsTest, ComparisonsAndWhere) {
  Tensor x = f32({4}, {-1, 0, 2, 3});
  Tensor m = greater(x, 0.5);
  EXPECT_EQ(m.dtype(), DType::kBool);
  EXPECT_EQ(where(m, x, -x).to_vector<float>(), (std::vector<float>{1, 0, 2, 3}));
  KILN_EXPECT_ERROR(where(x, x, x), DTypeError, "condition must be bool");
}

// keras.ops / tf.math names over the elementwise table, against NumPy 1.24's values.
TEST(OpsTest, FloorDivideModAndSquareMatchNumPy) {
  Tensor a = f32({8}, {7, -7, 7, -7, 6, -6, 5.5f, -5.5f});
  Tensor b = f32({8}, {2, 2, -2, -2, 3, 3, 2, 2});
  // np.floor_divide(a, b), np.mod(a, b)
  EXPECT_EQ(floor_divide(a, b).to_vector<float>(), (std::vector<float>{3, -4, -4, 3, 2, -2, 2, -3}));
  EXPECT_EQ(mod(a, b).to_vector<float>(), (std::vector<float>{1, 1, -1, -1, 0, 0, 1.5f, 0.5f}));
  Tensor i = Tensor::from_vector<int32_t>({9}, {7, -7, 7, -7, 6, -6, 0, -9, 5});
  Tensor j = Tensor::from_vector<int32_t>({9}, {2, 2, -2, -2, 3, -3, 5, 4, 0});
  // NumPy's but the last: x // 0 is x / 0 = -1 (all bits set), not NumPy's 0 with a warning.
  EXPECT_EQ(floor_divide(i, j).to_vector<int32_t>(), (std::vector<int32_t>{3, -4, -4, 3, 2, 2, 0, -3, -1}));
  EXPECT_EQ(mod(i, j).to_vector<int32_t>(), (std::vector<int32_t>{1, 1, -1, -1, 0, 0, 0, 3, 5}));
  EXPECT_EQ(square(f32({3}, {-3, 0.5f, 2})).to_vector<float>(), (std::vector<float>{9, 0.25f, 4}));
  EXPECT_EQ(square(Tensor::from_vector<int32_t>({2}, {-4, 46341})).to_vector<int32_t>(),
            (std::vector<int32_t>{16, -2147479015}));  // np.square(np.int32(46341)) wraps too
  EXPECT_EQ(round(f32({4}, {0.5f, 1.5f, 2.5f, -2.5f})).to_vector<float>(), (std::vector<float>{0, 2, 2, -2}));
  KILN_EXPECT_ERROR(sin(i), DTypeError, "needs a floating-point operand");
}

TEST(OpsTest, ReductionsKeepdimsMeanAndArgmax) {
  Tensor x = f32({2, 3}, {1, 5, 3, 4, 2, 6});
  EXPECT_EQ(reduce_sum(x).to_vector<float>(), (std::vector<float>{21}));
  EXPECT_EQ(reduce_max(x, {1}, true).shape(), Shape(DType::kF32, {2, 1}));
  EXPECT_EQ(reduce_min(x, {0}).to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(mean(x, {-1}).to_vector<float>(), (std::vector<float>{3, 4}));
  EXPECT_EQ(argmax(x).to_vector<int32_t>(), (std::vector<int32_t>{1, 2}));
  KILN_EXPECT_ERROR(reduce_sum(x, {2}), ShapeError, "axis 2 is out of range");
}

TEST(OpsTest, SoftmaxAndCrossEntropyAreStableForLargeLogits) {
  Tensor logits = f32({2, 3}, {1000, 1001, 1002, -5, 0, 5});
  std::vector<float> p = softmax(logits).to_vector<float>();
  EXPECT_NEAR(p[0] + p[1] + p[2], 1.0f, 1e-6f);
  EXPECT_NEAR(p[2], 0.66524096f, 1e-6f);
  std::vector<float> ls = log_softmax(logits).to_vector<float>();
  EXPECT_NEAR(ls[0], -2.40760596f, 1e-5f);
  Tensor labels = Tensor::from_vector<int32_t>({2}, {0, 2});
  std::vector<float> loss = sparse_softmax_cross_entropy_with_logits(labels, logits).to_vector<float>();
  EXPECT_NEAR(loss[0], 2.40760596f, 1e-5f);
  EXPECT_NEAR(loss[1], 0.00676040f, 1e-6f);  // log(1 + e^-5 + e^-10)
  KILN_EXPECT_ERROR(sparse_softmax_cross_entropy_with_logits(labels, f32({3, 2}, {1, 2, 3, 4, 5, 6})),
                    ShapeError, "labels i32[2] must have the logits' dims");
}

TEST(OpsTest, OneHotIotaShapeOps) {
  Tensor oh = one_hot(Tensor::from_vector<int32_t>({3}, {2, 0, 1}), 3);
  EXPECT_EQ(oh.to_vector<float>(), (std::vector<float>{0, 0, 1, 1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(iota(Shape(DType::kI32, {2, 3}), 1).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(transpose(x).to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(reshape(x, {3, -1}).shape(), Shape(DType::kF32, {3, 2}));
  EXPECT_EQ(concat({x, x}, 0).shape(), Shape(DType::kF32, {4, 3}));
  EXPECT_EQ(slice(x, {0, 1}, {2, 3}, {1, 2}).to_vector<float>(), (std::vector<float>{2, 5}));
  EXPECT_EQ(pad(f32({1}, {7}), {1}, {2}, -1).to_vector<float>(), (std::vector<float>{-1, 7, -1, -1}));
  EXPECT_EQ(take(x, Tensor::from_vector<int32_t>({2}, {1, 1}), 0).to_vector<float>(),
            (std::vector<float>{4, 5, 6, 4, 5, 6}));
  EXPECT_EQ(expand_dims(x, 0).shape(), Shape(DType::kF32, {1, 2, 3}));
}

TEST(OpsTest, RandomUniformIsInRangeAndReproducibleByKey) {
  Tensor key = Tensor::scalar(42, DType::kI64);
  std::vector<float> u = random_uniform(key, {1000}).to_vector<float>();
  double sum = 0;
  for (float v : u) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LT(v, 1.0f);
    sum += v;
  }
  EXPECT_NEAR(sum / 1000, 0.5, 0.05);
  EXPECT_EQ(random_uniform(key, {1000}).to_vector<float>(), u);
  EXPECT_NE(random_uniform(Tensor::scalar(43, DType::kI64), {1000}).to_vector<float>(), u);
  std::vector<float> r = random_uniform(key, {100}, DType::kF32, -2, 2).to_vector<float>();
  for (float v : r) EXPECT_TRUE(v >= -2.0f && v < 2.0f);
}

TEST(OpsTest, DropoutZeroesAtTheRateAndRescalesTheRest) {
  Tensor x = ones(Shape(DType::kF32, {2000}));
  std::vector<float> y = dropout(x, 0.25, Tensor::scalar(7, DType::kI64)).to_vector<float>();
  int zeros_seen = 0;
  for (float v : y) {
    if (v == 0.0f) ++zeros_seen;
    else EXPECT_FLOAT_EQ(v, 1.0f / 0.75f);
  }
  EXPECT_NEAR(zeros_seen / 2000.0, 0.25, 0.04);
  EXPECT_EQ(dropout(x, 0.25, Tensor::scalar(7, DType::kI64), /*training=*/false).node(), x.node());
}

TEST(OpsTest, SourceScopesNameTheLayerInErrors) {
  SourceScope model("model");
  SourceScope layer("dense_1");
  EXPECT_EQ(SourceScope::current(), "model/dense_1");
  KILN_EXPECT_ERROR(matmul(f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2, 3}, {1, 2, 3, 4, 5, 6})),
                    ShapeError, "[model/dense_1/dot_general] contracting dims differ");
}

TEST(OpsTest, ConvAndPoolingShapes) {
  Tensor x = ones(Shape(DType::kF32, {1, 5, 5, 2}));
  Tensor w = ones(Shape(DType::kF32, {3, 3, 2, 4}));
  EXPECT_EQ(conv2d(x, w).shape(), Shape(DType::kF32, {1, 3, 3, 4}));
  EXPECT_EQ(conv2d(x, w, {.strides = {2, 2}, .padding = "same"}).shape(), Shape(DType::kF32, {1, 3, 3, 4}));
  EXPECT_EQ(conv2d(x, w).to_vector<float>()[0], 18.0f);
  EXPECT_EQ(max_pool2d(x).shape(), Shape(DType::kF32, {1, 2, 2, 2}));
  EXPECT_EQ(avg_pool2d(x, {.padding = "same"}).shape(), Shape(DType::kF32, {1, 3, 3, 2}));
  KILN_EXPECT_ERROR(conv2d(x, w, {.padding = "causal"}), ValueError, "padding='causal'");
}

}  // namespace
}  // namespace kiln
