// GradientTape's handling of ops it cannot differentiate: an op with no VJP row is an error
// naming it (never silent zero gradients), while ops listed as non-differentiable, integer
// and bool values, and stop_gradient keep stopping the gradient quietly.
#include "kiln/trace/gradient_tape.h"

#include <gtest/gtest.h>

#include "kiln/trace/eager.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/vjp/vjp.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/finite_difference.h"

namespace kiln {
namespace {

using testing::check_gradients;
using testing::random_f64;
using Xs = std::vector<Tensor>;

TEST(GradientTapeTest, AnOpWithoutAVjpRowIsAnErrorNamingIt) {
  // Verify that a recorded op no VJP table has a row for (fusion: the compiler makes it, a
  // tape never should see it) fails the gradient instead of giving zeros.
  ASSERT_EQ(trace::find_vjp_entry(ir::Opcode::kFusion), nullptr);
  trace::EagerScope scope(runtime::make_reference_backend());
  Tensor x(random_f64({3}, 1));
  GradientTape tape;
  Tensor y = x * 2.0;
  Tensor z(y.value());  // a fresh value standing for the fusion's result
  trace::record_on_tapes(ir::Opcode::kFusion, {}, {y}, z);
  KILN_EXPECT_ERROR(tape.gradient(reduce_sum(z), x), CompileError,
                    "cannot differentiate through fusion (result f64[3]): it has no VJP rule");
}

TEST(GradientTapeTest, NonDifferentiableOpsAndStopGradientStillStopQuietly) {
  trace::EagerScope scope(runtime::make_reference_backend());
  Tensor x(random_f64({4}, 2));
  GradientTape tape;
  // compare and argmax have null rows or integer results; stop_gradient cuts the path.
  Tensor mask = cast(greater(x, 0.0), DType::kF64);
  Tensor picked = cast(argmax(x, 0), DType::kF64);
  Tensor loss = reduce_sum(mask * 3.0) + picked + reduce_sum(stop_gradient(x) * x);
  std::vector<double> g = tape.gradient(loss, x).value().to_vector<double>();
  std::vector<double> xv = x.value().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_DOUBLE_EQ(g[i], xv[i]) << i;  // d/dx sg(x) x = sg(x)
}

TEST(GradientTapeTest, SecondOrderAveragePoolingMatchesFiniteDifferences) {
  // Verify that the gradient of a pooling gradient flows (it was silently zero): d/dx of
  // sum(avg_pool_grad(x^2)) through reduce_window_grad's VJP.
  auto f = [](const Xs& v) {
    Tensor y;
    {
      GradientTape inner;
      Tensor p = avg_pool2d(v[0] * v[0], {.pool_size = {2, 2}, .strides = {1, 1}, .padding = "same"});
      y = inner.gradient(reduce_sum(p * p), v[0]);
    }
    return y;
  };
  EXPECT_TRUE(check_gradients(f, {random_f64({1, 3, 3, 2}, 3)}));
}

TEST(GradientTapeTest, SecondOrderMaxPoolingIsAnErrorNotZeros) {
  auto f = [](const Xs& v) {
    GradientTape inner;
    Tensor p = max_pool2d(v[0] * v[0]);
    return inner.gradient(reduce_sum(p * p), v[0]);
  };
  KILN_EXPECT_ERROR(check_gradients(f, {random_f64({1, 4, 4, 1}, 4)}), CompileError,
                    "second-order max pooling");
}

}  // namespace
}  // namespace kiln
