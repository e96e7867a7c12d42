// while_loop, cond and switch_case: traced (one while/conditional instruction, on the
// reference and cpu backends) and eager give the hand-computed values; cond's gradient
// matches finite differences; a gradient through while_loop is an error, never zeros.
#include "kiln/trace/ops/control_flow.h"

#include <gtest/gtest.h>

#include "kiln/ir/printer.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/runtime/reference/reference_backend.h"
#include "kiln/trace/eager.h"
#include "kiln/trace/function.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/finite_difference.h"

namespace kiln {
namespace {

using Xs = std::vector<Tensor>;

const HostTensor kX = HostTensor::from_vector<float>({3}, {1.0f, -0.5f, 2.0f});

// acc = acc * 2 + x four times from zero: 15 x. The counter is a loop value, x is captured.
Xs doubling_loop(const Xs& in) {
  const Tensor& x = in[0];
  return while_loop([](const Xs& v) { return less(v[0], Tensor::scalar(4, DType::kI32)); },
                    [&](const Xs& v) -> Xs { return {v[0] + 1.0, v[1] * 2.0 + x}; },
                    {Tensor::scalar(0, DType::kI32), zeros_like(x)});
}

std::vector<std::shared_ptr<runtime::Backend>> backends() {
  return {runtime::make_reference_backend(), runtime::default_backend()};
}

TEST(ControlFlowTest, WhileLoopRunsTracedOnEveryBackendAndEagerly) {
  const std::vector<float> expected = {15.0f, -7.5f, 30.0f};
  for (const auto& backend : backends()) {
    Function f("loop", [](const Xs& in) { return doubling_loop(in); }, {.backend = backend});
    std::vector<HostTensor> out = f({kX});
    EXPECT_EQ(out[0].to_vector<int32_t>(), std::vector<int32_t>{4}) << backend->name();
    EXPECT_EQ(out[1].to_vector<float>(), expected) << backend->name();
    // One loop, not an unrolled trace.
    EXPECT_NE(ir::to_string(*f.last_executable()->lowered_module()).find("while("), std::string::npos);
  }
  trace::EagerScope scope(runtime::make_reference_backend());
  EXPECT_EQ(doubling_loop({Tensor(kX)})[1].to_vector<float>(), expected);
}

TEST(ControlFlowTest, AGradientThroughWhileLoopIsAnErrorNotZeros) {
  Function f("grad", [](const Xs& in) -> Xs {
    GradientTape tape;
    Tensor loss = reduce_sum(doubling_loop(in)[1]);
    return tape.gradient(loss, {in[0]});
  }, {.backend = runtime::make_reference_backend()});
  KILN_EXPECT_ERROR(f({kX}), CompileError, "cannot differentiate through while_loop");
}

TEST(ControlFlowTest, WhileLoopRejectsABodyThatChangesAShape) {
  Function f("bad", [](const Xs& in) -> Xs {
    return while_loop([](const Xs& v) { return less(reduce_sum(v[0]), 10.0); },
                      [](const Xs& v) -> Xs { return {reduce_sum(v[0])}; }, {in[0]});
  }, {.backend = runtime::make_reference_backend()});
  KILN_EXPECT_ERROR(f({kX}), ShapeError, "body_fn returned (f32[]), expected the loop values' shapes (f32[3])");
}

TEST(ControlFlowTest, WhileLoopRejectsAConditionThatIsNotABoolScalar) {
  trace::EagerScope scope(runtime::make_reference_backend());
  KILN_EXPECT_ERROR(while_loop([](const Xs& v) { return v[0]; }, [](const Xs& v) { return v; }, {Tensor(kX)}),
                    ShapeError, "cond_fn's result must be a bool scalar, received f32[3]");
}

// cond(sum(x) > 0, x * x * y, x + y): both branches capture y.
Tensor branchy(const Xs& in) {
  const Tensor& y = in[1];
  return cond(greater(reduce_sum(in[0]), 0.0), [&](const Xs& v) -> Xs { return {v[0] * v[0] * y}; },
              [&](const Xs& v) -> Xs { return {v[0] + y}; }, {in[0]})[0];
}

TEST(ControlFlowTest, CondPicksTheBranchTracedAndEagerly) {
  const HostTensor y = HostTensor::from_vector<float>({3}, {2.0f, 2.0f, 2.0f});
  const HostTensor neg = HostTensor::from_vector<float>({3}, {-1.0f, -0.5f, 0.25f});
  for (const auto& backend : backends()) {
    Function f("cond", [](const Xs& in) { return branchy(in); }, {.backend = backend});
    EXPECT_EQ(f({kX, y})[0].to_vector<float>(), (std::vector<float>{2.0f, 0.5f, 8.0f})) << backend->name();
    EXPECT_EQ(f({neg, y})[0].to_vector<float>(), (std::vector<float>{1.0f, 1.5f, 2.25f})) << backend->name();
  }
  trace::EagerScope scope(runtime::make_reference_backend());
  EXPECT_EQ(branchy({Tensor(neg), Tensor(y)}).to_vector<float>(), (std::vector<float>{1.0f, 1.5f, 2.25f}));
}

TEST(ControlFlowTest, CondGradientsMatchFiniteDifferencesInBothBranches) {
  const HostTensor y = testing::random_f64({3}, 7);
  EXPECT_TRUE(testing::check_gradients(branchy, {testing::random_f64({3}, 8, 0.1, 1.0), y}));
  EXPECT_TRUE(testing::check_gradients(branchy, {testing::random_f64({3}, 9, -1.0, -0.1), y}));
  EXPECT_TRUE(testing::check_gradients(branchy, {testing::random_f64({3}, 10, 0.1, 1.0), y}, {.eager = true}));
}

TEST(ControlFlowTest, SwitchCaseRunsTheIndexedBranchAndTheLastWhenOutOfRange) {
  auto f = [](const Xs& in) {
    return switch_case(in[1], {[](const Xs& v) -> Xs { return {v[0] * 2.0}; },
                               [](const Xs& v) -> Xs { return {v[0] + 1.0}; },
                               [](const Xs& v) -> Xs { return {-v[0]}; }},
                       {in[0]})[0];
  };
  auto index = [](int32_t i) { return HostTensor::from_vector<int32_t>({}, {i}); };
  for (const auto& backend : backends()) {
    Function fn("switch", f, {.backend = backend});
    EXPECT_EQ(fn({kX, index(1)})[0].to_vector<float>(), (std::vector<float>{2.0f, 0.5f, 3.0f})) << backend->name();
    EXPECT_EQ(fn({kX, index(9)})[0].to_vector<float>(), (std::vector<float>{-1.0f, 0.5f, -2.0f})) << backend->name();
  }
}

TEST(ControlFlowTest, ALoopInsideABranchCapturesThroughBothLevels) {
  // The loop body reads x, a value two levels out: the branch and then the loop capture it.
  auto f = [](const Xs& in) {
    const Tensor& x = in[0];
    return cond(greater(reduce_sum(x), 0.0), [&](const Xs&) -> Xs { return {doubling_loop({x})[1]}; },
                [&](const Xs& v) -> Xs { return {v[0]}; }, {x})[0];
  };
  for (const auto& backend : backends()) {
    Function fn("nested", f, {.backend = backend});
    EXPECT_EQ(fn({kX})[0].to_vector<float>(), (std::vector<float>{15.0f, -7.5f, 30.0f})) << backend->name();
  }
}

}  // namespace
}  // namespace kiln
