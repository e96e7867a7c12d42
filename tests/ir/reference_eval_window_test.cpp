// Pooling in the reference evaluator: reduce_window max/mean by hand (padding excluded from
// means, as Keras 'same' average pooling does) and reduce_window_grad checked by hand, by the
// adjoint identity (mean) and by finite differences (max).
#include <gtest/gtest.h>

#include "tests/ir/reference_eval_test.h"

namespace kiln::ir {
namespace {

using WindowTest = ReferenceEvalFixture;

Window pool2d(int64_t k, int64_t s, int64_t lo = 0, int64_t hi = 0) {
  return {.size = {1, k, k, 1}, .strides = {1, s, s, 1}, .padding_low = {0, lo, lo, 0},
          .padding_high = {0, hi, hi, 0}};
}

TEST_F(WindowTest, MaxPoolTakesEachWindowsMaximum) {
  auto* x = arg<float>({1, 4, 4, 1}, {1, 2, 5, 6, 3, 4, 7, 8, 9, 10, 13, 14, 11, 12, 15, 16});
  EXPECT_EQ(eval_as<float>(b_.reduce_window(x, ReduceKind::kMax, pool2d(2, 2))),
            (std::vector<float>{4, 8, 12, 16}));
}

TEST_F(WindowTest, MaxPoolIgnoresPadding) {
  auto* x = arg<float>({1, 2, 2, 1}, {-5, -6, -7, -8});
  EXPECT_EQ(eval_as<float>(b_.reduce_window(x, ReduceKind::kMax, pool2d(3, 1, 1, 1))),
            (std::vector<float>{-5, -5, -5, -5}));
}

TEST_F(WindowTest, MeanPoolDividesByTheElementsInsideTheInput) {
  // Keras 'same' for k=2, s=1 on 3x3: pad 0 before, 1 after.
  auto* x = arg<float>({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(eval_as<float>(b_.reduce_window(x, ReduceKind::kMean, pool2d(2, 1, 0, 1))),
            (std::vector<float>{3, 4, 4.5, 6, 7, 7.5, 7.5, 8.5, 9}));
}

TEST_F(WindowTest, MaxGradGoesToTheFirstMaximumAndOverlapsAdd) {
  auto* x = arg<float>({1, 2, 2, 1}, {1, 3, 3, 2});
  auto* dy = arg<float>({1, 1, 1, 1}, {10});
  EXPECT_EQ(eval_as<float>(b_.reduce_window_grad(x, dy, ReduceKind::kMax, pool2d(2, 2))),
            (std::vector<float>{0, 10, 0, 0}));
  auto* row = arg<float>({1, 1, 3, 1}, {1, 5, 2});
  auto* dy2 = arg<float>({1, 1, 2, 1}, {1, 2});
  Window w{.size = {1, 1, 2, 1}, .strides = {1, 1, 1, 1}, .padding_low = {0, 0, 0, 0}, .padding_high = {0, 0, 0, 0}};
  EXPECT_EQ(eval_as<float>(b_.reduce_window_grad(row, dy2, ReduceKind::kMax, w)), (std::vector<float>{0, 3, 0}));
}

TEST_F(WindowTest, MeanGradSpreadsOverTheCountedElements) {
  auto* x = arg<float>({1, 2, 2, 1}, {0, 0, 0, 0});
  auto* dy = arg<float>({1, 2, 2, 1}, {4, 2, 2, 1});
  // Windows (k=2, s=1, pad after 1) count 4, 2, 2, 1 elements; each gives dy/count to each.
  EXPECT_EQ(eval_as<float>(b_.reduce_window_grad(x, dy, ReduceKind::kMean, pool2d(2, 1, 0, 1))),
            (std::vector<float>{1, 2, 2, 4}));
}

std::vector<Window> window_cases() {
  return {pool2d(2, 2), pool2d(3, 1, 1, 1), pool2d(3, 2, 1, 1), pool2d(2, 1, 0, 1),
          {.size = {1, 2, 3, 2}, .strides = {1, 2, 1, 2}, .padding_low = {0, 1, 0, 0},
           .padding_high = {0, 0, 2, 1}}};
}

TEST_F(WindowTest, MeanGradIsTheAdjointOfMeanPooling) {
  std::mt19937 gen(3);
  for (const Window& win : window_cases()) {
    Module m("adjoint");
    Builder b(m.entry());
    HostTensor xv = random_f64({2, 5, 6, 3}, gen);
    auto* x = b.parameter(xv.shape(), "x");
    auto* y = b.reduce_window(x, ReduceKind::kMean, win);
    HostTensor dyv = random_f64(y->shape().dims(), gen);
    auto* dx = b.reduce_window_grad(x, b.parameter(dyv.shape(), "dy"), ReduceKind::kMean, win);
    m.entry()->set_outputs({y, dx});
    std::vector<HostTensor> args = {xv, dyv};
    auto out = evaluate(m, args);
    const double lhs = inner_product(out[0], dyv);
    EXPECT_NEAR(lhs, inner_product(xv, out[1]), 1e-12 * (1 + std::abs(lhs)));
  }
}

TEST_F(WindowTest, MaxGradMatchesFiniteDifferences) {
  std::mt19937 gen(5);
  for (const Window& win : window_cases()) {
    Module m("fd");
    Builder b(m.entry());
    HostTensor xv = random_f64({1, 4, 5, 2}, gen);  // distinct values: max is differentiable
    auto* x = b.parameter(xv.shape(), "x");
    auto* y = b.reduce_window(x, ReduceKind::kMax, win);
    HostTensor dyv = random_f64(y->shape().dims(), gen);
    auto* dx = b.reduce_window_grad(x, b.parameter(dyv.shape(), "dy"), ReduceKind::kMax, win);
    m.entry()->set_outputs({y, dx});
    auto loss = [&](const HostTensor& at) {
      std::vector<HostTensor> args = {at, dyv};
      return inner_product(evaluate(m, args)[0], dyv);
    };
    std::vector<HostTensor> args = {xv, dyv};
    HostTensor grad = evaluate(m, args)[1];
    const double h = 1e-6;
    for (size_t i = 0; i < xv.data<double>().size(); ++i) {
      HostTensor up = xv.clone(), down = xv.clone();
      up.data<double>()[i] += h;
      down.data<double>()[i] -= h;
      EXPECT_NEAR(grad.data<double>()[i], (loss(up) - loss(down)) / (2 * h), 1e-6) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace kiln::ir
