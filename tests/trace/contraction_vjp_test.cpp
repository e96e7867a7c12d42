// Gradient checks for matmul/dot_general (batch dims in any position), convolution (stride,
// padding, dilation, groups) with its backward forms, and max/avg pooling.
#include <gtest/gtest.h>

#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/shape.h"
#include "tests/testing/finite_difference.h"

namespace kiln {
namespace {

using testing::check_gradients;
using testing::random_f64;
using Xs = std::vector<Tensor>;

TEST(ContractionVjpTest, MatmulTwoDimensionalAndBatched) {
  EXPECT_TRUE(check_gradients([](const Xs& v) { return matmul(v[0], v[1]); },
                              {random_f64({3, 4}, 1), random_f64({4, 2}, 2)}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return matmul(v[0], v[1]); },
                              {random_f64({2, 3, 4}, 3), random_f64({2, 4, 5}, 4)}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return matmul(v[0], v[1]); },
                              {random_f64({2, 3, 4}, 5), random_f64({4, 2}, 6)}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return matmul(v[0], v[1]); },
                              {random_f64({4}, 7), random_f64({4, 3}, 8)}));
}

TEST(ContractionVjpTest, DotGeneralWithBatchAndContractingDimsAnywhere) {
  // lhs (c=3, b=2, m=4, k=5), rhs (k=5, n=2, b=2, c=3): batch b, contract (c, k) in odd order.
  ir::DotDims d;
  d.lhs_batch = {1};
  d.rhs_batch = {2};
  d.lhs_contracting = {3, 0};
  d.rhs_contracting = {0, 3};
  EXPECT_TRUE(check_gradients([d](const Xs& v) { return dot_general(v[0], v[1], d); },
                              {random_f64({3, 2, 4, 5}, 9), random_f64({5, 2, 2, 3}, 10)}));
  // Outer product (no contraction) and a full contraction to a scalar.
  EXPECT_TRUE(check_gradients([](const Xs& v) { return dot_general(v[0], v[1], {}); },
                              {random_f64({3}, 11), random_f64({2, 2}, 12)}));
  ir::DotDims full;
  full.lhs_contracting = {0, 1};
  full.rhs_contracting = {1, 0};
  EXPECT_TRUE(check_gradients([full](const Xs& v) { return dot_general(v[0], v[1], full); },
                              {random_f64({3, 2}, 13), random_f64({2, 3}, 14)}));
}

struct ConvCase {
  const char* name;
  Dims x, w;
  Conv2DOptions options;
};

TEST(ContractionVjpTest, Conv2dStridesPaddingDilationGroups) {
  const ConvCase cases[] = {
      {"valid", {2, 5, 5, 2}, {3, 3, 2, 3}, {}},
      {"same_stride2", {1, 6, 5, 2}, {3, 2, 2, 2}, {.strides = {2, 2}, .padding = "same"}},
      {"dilated", {1, 7, 6, 1}, {2, 2, 1, 2}, {.dilation = {2, 3}}},
      {"groups", {1, 4, 4, 4}, {2, 2, 2, 6}, {.groups = 2}},
      {"explicit_pad", {1, 4, 5, 2}, {3, 3, 2, 1},
       {.strides = {2, 1}, .padding_low = {1, 0}, .padding_high = {2, 1}}},
  };
  for (const ConvCase& c : cases) {
    Conv2DOptions o = c.options;
    EXPECT_TRUE(check_gradients([o](const Xs& v) { return conv2d(v[0], v[1], o); },
                                {random_f64(c.x, 15), random_f64(c.w, 16)}))
        << c.name;
  }
}

TEST(ContractionVjpTest, PoolingRoutesOrSpreadsTheGradient) {
  HostTensor x = random_f64({2, 4, 6, 3}, 17);  // distinct values: no ties in max windows
  EXPECT_TRUE(check_gradients([](const Xs& v) { return max_pool2d(v[0]); }, {x}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return avg_pool2d(v[0]); }, {x}));
  Pool2DOptions overlap{.pool_size = {3, 3}, .strides = {1, 2}, .padding = "same"};
  EXPECT_TRUE(check_gradients([overlap](const Xs& v) { return max_pool2d(v[0], overlap); }, {x}));
  EXPECT_TRUE(check_gradients([overlap](const Xs& v) { return avg_pool2d(v[0], overlap); }, {x}));
}

}  // namespace
}  // namespace kiln
