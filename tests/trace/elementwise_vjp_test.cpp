// Gradient checks (f64, central differences) for every differentiable elementwise op,
// including NumPy broadcasting between operands of different ranks.
#include <gtest/gtest.h>

#include "kiln/trace/ops/elementwise.h"
#include "tests/testing/finite_difference.h"

namespace kiln {
namespace {

using testing::check_gradients;
using testing::random_f64;
using Xs = std::vector<Tensor>;

TEST(ElementwiseVjpTest, UnaryOpsMatchFiniteDifferences) {
  HostTensor any = random_f64({2, 3}, 1);
  HostTensor positive = random_f64({2, 3}, 2, 0.5, 2.0);
  HostTensor away_from_zero = random_f64({2, 3}, 3, 0.2, 1.0);
  struct Case {
    const char* name;
    Tensor (*fn)(const Tensor&);
    HostTensor input;
  } cases[] = {
      {"neg", neg, any},          {"exp", exp, any},           {"log", log, positive},
      {"log1p", log1p, positive}, {"tanh", tanh, any},         {"sigmoid", sigmoid, any},
      {"sqrt", sqrt, positive},   {"rsqrt", rsqrt, positive},  {"erf", erf, any},
      {"abs", abs, away_from_zero}, {"sign", sign, away_from_zero},
  };
  for (const Case& c : cases) {
    auto f = c.fn;
    EXPECT_TRUE(check_gradients([f](const Xs& x) { return f(x[0]); }, {c.input})) << c.name;
  }
  // abs away from its kink on the negative side too.
  EXPECT_TRUE(check_gradients([](const Xs& x) { return abs(-x[0]); }, {away_from_zero}));
}

TEST(ElementwiseVjpTest, BinaryOpsMatchFiniteDifferences) {
  HostTensor a = random_f64({2, 3}, 4);
  HostTensor b = random_f64({2, 3}, 5, 0.5, 1.5);
  EXPECT_TRUE(check_gradients([](const Xs& x) { return x[0] + x[1]; }, {a, b}));
  EXPECT_TRUE(check_gradients([](const Xs& x) { return x[0] - x[1]; }, {a, b}));
  EXPECT_TRUE(check_gradients([](const Xs& x) { return x[0] * x[1]; }, {a, b}));
  EXPECT_TRUE(check_gradients([](const Xs& x) { return x[0] / x[1]; }, {a, b}));
  EXPECT_TRUE(check_gradients([](const Xs& x) { return pow(x[1], x[0]); }, {a, b}));
  EXPECT_TRUE(check_gradients([](const Xs& x) { return pow(x[0], 3.0); }, {a}));
  // Distinct values: max/min away from ties.
  EXPECT_TRUE(check_gradients([](const Xs& x) { return maximum(x[0], x[1]); }, {a, b}));
  EXPECT_TRUE(check_gradients([](const Xs& x) { return minimum(x[0], x[1]); }, {a, b}));
  EXPECT_TRUE(check_gradients([](const Xs& x) { return 2.0 * x[0] - x[0] / 3.0 + 1.0; }, {a}));
}

TEST(ElementwiseVjpTest, MaxSplitsTiesEvenlyLikeCentralDifferences) {
  HostTensor a = HostTensor::from_vector<double>({3}, {0.5, -1.0, 2.0});
  EXPECT_TRUE(check_gradients([](const Xs& x) { return maximum(x[0], x[1]); }, {a, a.clone()}));
  EXPECT_TRUE(check_gradients([](const Xs& x) { return minimum(x[0], x[1]); }, {a, a.clone()}));
}

TEST(ElementwiseVjpTest, BroadcastingOperandsGetSummedGradients) {
  // (2,3,4) with (4), (3,1), (2,1,4) and a scalar.
  HostTensor x = random_f64({2, 3, 4}, 6);
  EXPECT_TRUE(check_gradients([](const Xs& v) { return v[0] * v[1]; }, {x, random_f64({4}, 7)}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return v[0] - v[1]; }, {x, random_f64({3, 1}, 8)}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return v[1] / (v[0] * v[0] + 1.0); },
                              {x, random_f64({2, 1, 4}, 9)}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return v[0] + v[1]; }, {x, random_f64({}, 10)}));
}

TEST(ElementwiseVjpTest, SelectRoutesGradientByCondition) {
  HostTensor a = random_f64({2, 3}, 11);
  HostTensor b = random_f64({2, 3}, 12);
  EXPECT_TRUE(check_gradients(
      [](const Xs& x) { return where(greater(x[0], x[1]), x[0] * x[0], x[1] * 3.0); }, {a, b}));
  // relu is max(x, 0).
  EXPECT_TRUE(check_gradients([](const Xs& x) { return maximum(x[0], 0.0); }, {a}));
}

TEST(ElementwiseVjpTest, ConvertPassesGradientBackInTheSourceDtype) {
  HostTensor a = random_f64({2, 3}, 13);
  EXPECT_TRUE(check_gradients([](const Xs& x) { return cast(cast(x[0], DType::kF32) * 2.0, DType::kF64); },
                              {a}, {.eps = 1e-3, .rtol = 1e-4, .atol = 1e-5}));
}

TEST(ElementwiseVjpTest, IntegerPathsStopTheGradient) {
  HostTensor a = random_f64({4}, 14, 0.0, 3.0);
  // floor-like path through i32 contributes nothing; the direct path still does.
  EXPECT_TRUE(check_gradients(
      [](const Xs& x) { return x[0] * 2.0 + cast(cast(x[0], DType::kI32), DType::kF64) * 0.0; }, {a}));
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(FiniteDifferenceTest, CatchesAWrongGradientAndNamesTheWorstElement) {
  // stop_gradient hides half of d(x*x)/dx, so analytic (x) and numeric (2x) disagree.
  HostTensor a = HostTensor::from_vector<double>({3}, {1.0, -2.0, 3.0});
  ::testing::AssertionResult r = testing::check_gradients(
      [](const std::vector<Tensor>& x) { return x[0] * stop_gradient(x[0]); }, {a});
  EXPECT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("worst element: input 0 f64[3] index"), std::string::npos)
      << r.message();
}

}  // namespace
}  // namespace kiln
