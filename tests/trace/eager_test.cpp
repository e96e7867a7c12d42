// Eager mode: ops on concrete tensors match the same ops traced and compiled, each distinct
// op compiles once per eager context, and GradientTape works on concrete tensors too.
#include "kiln/trace/eager.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kiln/runtime/reference/reference_backend.h"
#include "kiln/trace/function.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/finite_difference.h"

namespace kiln {
namespace {

using Xs = std::vector<Tensor>;

Xs model(const Xs& x) {
  Tensor h = relu(matmul(x[0], x[1]) + x[2]);
  Tensor p = softmax(h);
  return {p, reduce_max(h, {0}), transpose(slice(h, {0, 1}, {2, 3})),
          sparse_softmax_cross_entropy_with_logits(x[3], h)};
}

// Traced on the reference backend, eager on the CPU backend: other engines, whose matmul sums
// in another order, so the promise is agreement within f32 rounding of the sums (docs/numerics.md;
// on AVX2 CPUs oneDNN's order differs from the reference's by ~1 ulp of the terms).
TEST(EagerTest, EagerOpsMatchTracedOps) {
  std::vector<HostTensor> in = {testing::random_f64({2, 3}, 1).astype(DType::kF32),
                                testing::random_f64({3, 4}, 2).astype(DType::kF32),
                                testing::random_f64({4}, 3).astype(DType::kF32),
                                HostTensor::from_vector<int32_t>({2}, {3, 0})};
  auto backend = runtime::make_reference_backend();
  std::vector<HostTensor> traced = Function("model", model, {.backend = std::move(backend)})(in);
  Xs eager = model({Tensor(in[0]), Tensor(in[1]), Tensor(in[2]), Tensor(in[3])});
  ASSERT_EQ(traced.size(), eager.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    EXPECT_EQ(traced[i].shape(), eager[i].shape());
    std::vector<float> a = traced[i].to_vector<float>(), b = eager[i].to_vector<float>();
    for (size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 1e-6 * (1 + std::fabs(b[j]))) << "output " << i;
  }
}

TEST(EagerTest, EachDistinctOpCompilesOncePerContext) {
  auto context = std::make_shared<trace::EagerContext>(runtime::make_reference_backend());
  trace::EagerScope scope(context);
  Tensor a = Tensor::from_vector<float>({2}, {1, 2});
  Tensor b = Tensor::from_vector<float>({2}, {3, 4});
  EXPECT_EQ((a + b).to_vector<float>(), (std::vector<float>{4, 6}));
  EXPECT_EQ((b + a).to_vector<float>(), (std::vector<float>{4, 6}));
  EXPECT_EQ(context->cache_size(), 1);
  a* b;
  Tensor::from_vector<float>({3}, {1, 2, 3}) + Tensor::from_vector<float>({3}, {1, 2, 3});
  EXPECT_EQ(context->cache_size(), 3);
  EXPECT_EQ(&trace::current_eager_context(), context.get());
}

TEST(EagerTest, EagerScopeSelectsTheBackendPerThread) {
  trace::EagerScope scope(std::shared_ptr<runtime::Backend>(
      runtime::make_reference_backend({ir::Opcode::kExp})));
  Tensor x = Tensor::from_vector<float>({2}, {1, 2});
  EXPECT_EQ((x + x).to_vector<float>(), (std::vector<float>{2, 4}));
  KILN_EXPECT_ERROR(exp(x), CompileError, "exp");
}

TEST(EagerTest, GradientTapeWorksOnConcreteTensors) {
  Tensor x = Tensor::from_vector<float>({3}, {1, -2, 3});
  Variable w("w", HostTensor::from_vector<float>({3}, {0.5f, 0.5f, 0.5f}));
  GradientTape tape;
  Tensor loss = reduce_sum(x * x * w);
  std::vector<Tensor> g = tape.gradient(loss, {x, w});
  EXPECT_EQ(g[0].to_vector<float>(), (std::vector<float>{1, -2, 3}));
  EXPECT_EQ(g[1].to_vector<float>(), (std::vector<float>{1, 4, 9}));
  EXPECT_GT(tape.recorded_ops(), 0u);
}

TEST(EagerTest, EagerGradientsMatchFiniteDifferences) {
  using testing::check_gradients;
  EXPECT_TRUE(check_gradients([](const Xs& v) { return log_softmax(matmul(v[0], v[1])); },
                              {testing::random_f64({2, 3}, 4), testing::random_f64({3, 4}, 5)},
                              {.eager = true}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return reduce_max(tanh(v[0]), {1}); },
                              {testing::random_f64({3, 4}, 6)}, {.eager = true}));
}

TEST(EagerTest, UnrelatedSourcesGetZerosAndStoppedPathsGiveNothing) {
  Tensor x = Tensor::from_vector<float>({2}, {1, 2});
  Tensor unused = Tensor::from_vector<float>({3}, {1, 2, 3});
  GradientTape tape;
  Tensor y = reduce_sum(x * stop_gradient(x)) + reduce_sum(cast(argmax(x, 0), DType::kF32));
  std::vector<Tensor> g = tape.gradient(y, {x, unused});
  EXPECT_EQ(g[0].to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(g[1].to_vector<float>(), (std::vector<float>{0, 0, 0}));
}

TEST(EagerTest, GradientOfAnIntegerTargetIsADTypeError) {
  Tensor x = Tensor::from_vector<float>({2}, {1, 2});
  GradientTape tape;
  KILN_EXPECT_ERROR(tape.gradient(argmax(x, 0), x), DTypeError, "floating-point");
}

}  // namespace
}  // namespace kiln
