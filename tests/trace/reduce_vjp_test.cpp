// Gradient checks for reductions over every axis combination of a rank-3 input (with and
// without keepdims), ties in max/min, mean, softmax, log_softmax and the cross-entropy loss.
#include <gtest/gtest.h>

#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "tests/testing/finite_difference.h"

namespace kiln {
namespace {

using testing::check_gradients;
using testing::random_f64;
using Xs = std::vector<Tensor>;

const std::vector<std::vector<int>> kAxisCombinations = {
    {0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}, {-1}, {2, 0}};

TEST(ReduceVjpTest, EveryReductionOverEveryAxisCombinationOfARank3Input) {
  HostTensor x = random_f64({2, 3, 4}, 1);  // distinct values: no ties
  using Reduce = Tensor (*)(const Tensor&, std::vector<int>, bool);
  struct { const char* name; Reduce fn; } reductions[] = {
      {"reduce_sum", reduce_sum}, {"reduce_max", reduce_max}, {"reduce_min", reduce_min},
      {"mean", mean}};
  for (const auto& r : reductions)
    for (const auto& axes : kAxisCombinations)
      for (bool keepdims : {false, true}) {
        auto fn = r.fn;
        EXPECT_TRUE(check_gradients([&](const Xs& v) { return fn(v[0], axes, keepdims); }, {x}))
            << r.name << " axes " << ::testing::PrintToString(axes) << " keepdims " << keepdims;
      }
  EXPECT_TRUE(check_gradients([](const Xs& v) { return reduce_sum(v[0] * v[0]); }, {x}));
}

TEST(ReduceVjpTest, MaxAndMinSplitTiesEvenly) {
  HostTensor x = HostTensor::from_vector<double>({2, 3}, {1.0, 3.0, 3.0, -2.0, -2.0, 0.5});
  EXPECT_TRUE(check_gradients([](const Xs& v) { return reduce_max(v[0], {1}); }, {x}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return reduce_min(v[0], {1}); }, {x}));
}

TEST(ReduceVjpTest, SoftmaxFamilyMatchesFiniteDifferences) {
  HostTensor x = random_f64({3, 5}, 2, -3.0, 3.0);
  EXPECT_TRUE(check_gradients([](const Xs& v) { return softmax(v[0]); }, {x}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return softmax(v[0], 0); }, {x}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return log_softmax(v[0]); }, {x}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return logsumexp(v[0], 1); }, {x}));
}

TEST(ReduceVjpTest, SparseSoftmaxCrossEntropyMatchesFiniteDifferences) {
  HostTensor logits = random_f64({4, 5}, 3, -3.0, 3.0);
  HostTensor labels = HostTensor::from_vector<int32_t>({4}, {0, 4, 2, 2});
  EXPECT_TRUE(check_gradients(
      [](const Xs& v) { return mean(sparse_softmax_cross_entropy_with_logits(v[1], v[0])); },
      {logits, labels}));
  // The gradient is softmax - one_hot, divided by the batch size.
  EXPECT_TRUE(check_gradients(
      [](const Xs& v) { return sparse_softmax_cross_entropy_with_logits(v[1], v[0] * 50.0); },
      {logits, labels}, {.rtol = 1e-5, .atol = 1e-7}));
}

}  // namespace
}  // namespace kiln
