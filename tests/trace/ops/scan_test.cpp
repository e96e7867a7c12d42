// kiln::scan (unrolled): carries and stacked ys forwards and reversed, gradients through the
// steps against f64 central differences, and the errors.
#include "kiln/trace/ops/scan.h"

#include <gtest/gtest.h>

#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/shape.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/finite_difference.h"

namespace kiln {
namespace {

using kiln::testing::check_gradients;
using kiln::testing::random_f64;

// A running sum with a product output: carry c += x_t, y_t = c * x_t.
std::pair<std::vector<Tensor>, std::vector<Tensor>> running(const std::vector<Tensor>& carry,
                                                            const std::vector<Tensor>& x_t) {
  Tensor c = carry[0] + x_t[0];
  return {{c}, {c * x_t[0]}};
}

TEST(ScanTest, CarriesAndStacksInTimeOrderBothWays) {
  const Tensor xs = Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor init = Tensor::from_vector<float>({2}, {10, 20});
  ScanResult fw = scan(running, {init}, {xs});
  EXPECT_EQ(fw.carry[0].to_vector<float>(), (std::vector<float>{19, 32}));
  // c: (11, 22), (14, 26), (19, 32); y = c * x.
  EXPECT_EQ(fw.ys[0].dims(), (Dims{3, 2}));
  EXPECT_EQ(fw.ys[0].to_vector<float>(), (std::vector<float>{11, 44, 42, 104, 95, 192}));
  ScanResult bw = scan(running, {init}, {xs}, /*reverse=*/true);
  // Walks t = 2, 1, 0: c: (15, 26), (18, 30), (19, 32); ys stay in t order.
  EXPECT_EQ(bw.carry[0].to_vector<float>(), (std::vector<float>{19, 32}));
  EXPECT_EQ(bw.ys[0].to_vector<float>(), (std::vector<float>{19, 64, 54, 120, 75, 156}));
}

TEST(ScanTest, GradientsThroughTheStepsMatchFiniteDifferences) {
  // An Elman recurrence h = tanh(x_t + h @ w) over 4 steps, both directions.
  for (bool reverse : {false, true}) {
    auto f = [reverse](const std::vector<Tensor>& in) {
      auto body = [&](const std::vector<Tensor>& carry, const std::vector<Tensor>& x_t) {
        Tensor h = tanh(x_t[0] + matmul(carry[0], in[2]));
        return std::pair<std::vector<Tensor>, std::vector<Tensor>>{{h}, {h * h}};
      };
      ScanResult r = scan(body, {in[1]}, {in[0]}, reverse);
      return r.ys[0] + expand_dims(r.carry[0], 0);
    };
    EXPECT_TRUE(check_gradients(f, {random_f64({4, 2, 3}, 1), random_f64({2, 3}, 2), random_f64({3, 3}, 3)},
                                {.rtol = 1e-6, .atol = 1e-8}));
  }
}

TEST(ScanTest, RejectsMismatchedLengthsAndCarryChanges) {
  const Tensor a = Tensor::from_vector<float>({2, 1}, {1, 2}), b = Tensor::from_vector<float>({3}, {1, 2, 3});
  KILN_EXPECT_ERROR(scan(running, {Tensor::from_vector<float>({1}, {0})}, {a, b}), ShapeError, "every xs tensor needs the same leading dim");
  KILN_EXPECT_ERROR(scan(running, {}, {}), ValueError, "at least one xs");
  auto grows = [](const std::vector<Tensor>& carry, const std::vector<Tensor>& x_t) {
    return std::pair<std::vector<Tensor>, std::vector<Tensor>>{{concat({carry[0], x_t[0]}, 0)}, {}};
  };
  KILN_EXPECT_ERROR(scan(grows, {Tensor::from_vector<float>({1}, {0})}, {a}), ShapeError, "body returned a carry of");
}

}  // namespace
}  // namespace kiln
