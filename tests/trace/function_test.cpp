// kiln::function: tracing once per signature, the retrace counter and warning (S19), declared
// input signatures with dynamic or mismatched shapes (S23), and what it exposes for tests.
#include "kiln/trace/function.h"

#include <gtest/gtest.h>

#include "kiln/runtime/reference/reference_backend.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/trace_context.h"
#include "tests/testing/expect_error.h"

namespace kiln {
namespace {

using Xs = std::vector<Tensor>;

FunctionOptions reference() { return {.backend = runtime::make_reference_backend()}; }

HostTensor filled(Dims dims, float v) {
  HostTensor t(Shape(DType::kF32, std::move(dims)));
  for (float& x : t.data<float>()) x = v;
  return t;
}

TEST(FunctionTest, SecondCallWithTheSameSignatureDoesNotRetrace) {
  int python_side_effects = 0;
  Function f = function("double_sum", [&](const Xs& x) {
    ++python_side_effects;
    return reduce_sum(x[0] * 2.0);
  }, reference());
  EXPECT_FLOAT_EQ(f({filled({4, 3}, 1.0f)})[0].to_vector<float>()[0], 24.0f);
  EXPECT_FLOAT_EQ(f({filled({4, 3}, 0.5f)})[0].to_vector<float>()[0], 12.0f);
  EXPECT_EQ(f.trace_count(), 1);
  EXPECT_EQ(python_side_effects, 1);
}

TEST(FunctionTest, ANewBatchSizeOrDtypeRetraces) {
  Function f = function("id_plus_one", [](const Xs& x) { return x[0] + 1.0; }, reference());
  f({filled({4, 3}, 1.0f)});
  f({filled({8, 3}, 1.0f)});
  f({filled({4, 3}, 1.0f)});
  EXPECT_EQ(f.trace_count(), 2);
  f({HostTensor(Shape(DType::kF64, {4, 3}))});
  EXPECT_EQ(f.trace_count(), 3);
}

TEST(FunctionTest, WarnsOnceAfterMoreThanFiveSignatures) {
  Function f = function("train_step", [](const Xs& x) { return reduce_sum(x[0]); }, reference());
  ::testing::internal::CaptureStderr();
  for (int batch = 1; batch <= 5; ++batch) f({filled({batch, 2}, 1.0f)});
  std::string quiet = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(quiet.find("traced"), std::string::npos) << quiet;
  ::testing::internal::CaptureStderr();
  f({filled({6, 2}, 1.0f)});
  f({filled({7, 2}, 1.0f)});
  std::string warned = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warned.find("function 'train_step' has been traced 6 times"), std::string::npos) << warned;
  EXPECT_NE(warned.find("drop_remainder=true"), std::string::npos) << warned;
  EXPECT_EQ(warned.find("traced 7 times"), std::string::npos) << "warns once: " << warned;
  EXPECT_EQ(f.trace_count(), 7);
}

TEST(FunctionTest, DeclaredDynamicDimensionIsACompileErrorNamingTheInput) {
  FunctionOptions o = reference();
  o.input_signature = {{.shape = {-1, 784}, .dtype = DType::kF32, .name = "x"},
                       {.shape = {-1}, .dtype = DType::kI32, .name = "labels"}};
  Function f = function("train_step", [](const Xs& x) { return reduce_sum(x[0]); }, o);
  KILN_EXPECT_ERROR(f({filled({32, 784}, 0.0f), HostTensor(Shape(DType::kI32, {32}))}),
                    CompileError, "input 0 'x' has a dynamic dimension 0");
  KILN_EXPECT_ERROR(f({filled({32, 784}, 0.0f), HostTensor(Shape(DType::kI32, {32}))}),
                    CompileError, "drop_remainder=true");
  EXPECT_EQ(f.trace_count(), 0);
}

TEST(FunctionTest, CallsThatDoNotMatchTheInputSignatureAreCompileErrors) {
  FunctionOptions o = reference();
  o.input_signature = {{.shape = {128, 784}, .dtype = DType::kF32, .name = "x"},
                       {.shape = {128}, .dtype = DType::kI32, .name = "labels"}};
  Function f = function("train_step", [](const Xs& x) { return reduce_sum(x[0]); }, o);
  KILN_EXPECT_ERROR(f({filled({100, 784}, 0.0f), HostTensor(Shape(DType::kI32, {100}))}),
                    CompileError, "input 0 'x' expected f32[128,784], received f32[100,784]");
  KILN_EXPECT_ERROR(f({filled({128, 784}, 0.0f), HostTensor(Shape(DType::kI32, {128, 1}))}),
                    CompileError, "input 1 'labels' expected i32[128], received i32[128,1] (a different rank)");
  KILN_EXPECT_ERROR(f({filled({128, 784}, 0.0f)}), CompileError, "expected 2 inputs");
  EXPECT_NO_THROW(f({filled({128, 784}, 0.0f), HostTensor(Shape(DType::kI32, {128}))}));
}

TEST(FunctionTest, ExposesTheTracedIrAndTheExecutable) {
  FunctionOptions o = reference();
  o.input_signature = {{.shape = {2, 3}, .name = "x"}, {.shape = {3, 4}, .name = "w"}};
  Function f = function("dense", [](const Xs& x) -> Xs {
    SourceScope scope("dense_1");
    return {relu(matmul(x[0], x[1])), reduce_sum(x[0])};
  }, o);
  EXPECT_EQ(f.last_executable(), nullptr);
  std::vector<HostTensor> out = f({filled({2, 3}, 1.0f), filled({3, 4}, -1.0f)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), Shape(DType::kF32, {2, 4}));
  EXPECT_EQ(out[0].to_vector<float>(), std::vector<float>(8, 0.0f));
  EXPECT_NE(f.last_ir().find("parameter(0) \"x\""), std::string::npos) << f.last_ir();
  EXPECT_NE(f.last_ir().find("dot_general"), std::string::npos) << f.last_ir();
  ASSERT_NE(f.last_executable(), nullptr);
  EXPECT_GT(f.last_executable()->kernel_count(), 0);
}

TEST(FunctionTest, ErrorsInsideTheTraceNameTheSourceScope) {
  Function f = function("bad", [](const Xs& x) {
    SourceScope scope("dense_1");
    return matmul(x[0], x[0]);
  }, reference());
  KILN_EXPECT_ERROR(f({filled({2, 3}, 1.0f)}), ShapeError, "[dense_1/dot_general]");
  EXPECT_EQ(f.trace_count(), 0);
}

TEST(FunctionTest, ATensorLeakedFromAFinishedTraceIsAClearError) {
  Tensor leaked;
  Function keep = function("keep", [&](const Xs& x) {
    leaked = x[0] * 2.0;
    return leaked;
  }, reference());
  keep({filled({2}, 1.0f)});
  Function use = function("use", [&](const Xs& x) { return x[0] + leaked; }, reference());
  KILN_EXPECT_ERROR(use({filled({2}, 1.0f)}), ValueError, "from another trace");
  KILN_EXPECT_ERROR(leaked.value(), ValueError, "symbolic");
}

TEST(FunctionTest, ConstantsFromOutsideTheTraceAreCaptured) {
  Tensor bias = Tensor::from_vector<float>({2}, {10.0f, 20.0f});
  Function f = function("add_bias", [&](const Xs& x) { return x[0] + bias; }, reference());
  EXPECT_EQ(f({filled({2}, 1.0f)})[0].to_vector<float>(), (std::vector<float>{11.0f, 21.0f}));
}

}  // namespace
}  // namespace kiln
