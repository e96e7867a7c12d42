// The CPU backend's list of reference fallbacks (reference_fallbacks.h): its lookups, the
// lowering running a listed fallback and refusing an unlisted one. The op conformance table checks the list
// against every op and dtype (a fallback it lacks fails there, and so does an entry no case needs).
#include "kiln/runtime/cpu/reference_fallbacks.h"

#include <gtest/gtest.h>

#include <set>

#include "kiln/compiler/passes/fusion_builder.h"
#include "kiln/core/error.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/runtime/cpu/cpu_backend.h"
#include "kiln/runtime/cpu/cpu_executable.h"

namespace kiln::cpu {
namespace {

using ir::Opcode;

TEST(ReferenceFallbacksTest, FindsAListedOpOnlyInItsDtypes) {
  ASSERT_NE(find_reference_fallback(Opcode::kDotGeneral, DType::kF64), nullptr);
  EXPECT_EQ(find_reference_fallback(Opcode::kDotGeneral, DType::kF64)->op, Opcode::kDotGeneral);
  EXPECT_EQ(find_reference_fallback(Opcode::kDotGeneral, DType::kF32), nullptr);
  EXPECT_NE(find_reference_fallback(Opcode::kScatterAdd, DType::kBF16), nullptr);
  EXPECT_EQ(find_reference_fallback(Opcode::kScatterAdd, DType::kF64), nullptr);
  EXPECT_EQ(find_reference_fallback(Opcode::kAdd, DType::kF64), nullptr);
}

TEST(ReferenceFallbacksTest, EachOpHasOneDtypeRuleAndAttributeRulesWithReasons) {
  // Every op has an f32 kernel on the CPU: a dtype rule says which other dtypes lack one, an
  // attribute rule which attributes its kernel refuses in any dtype; both say why.
  std::set<Opcode> with_dtype_rule;
  int attribute_rules = 0;
  for (const ReferenceFallbackRule& r : reference_fallback_rules()) {
    EXPECT_FALSE(r.reason.empty()) << ir::opcode_name(r.op);
    if (r.applies != nullptr) {
      EXPECT_TRUE(r.dtypes.empty()) << ir::opcode_name(r.op) << "'s attribute rule also lists dtypes";
      ++attribute_rules;
      continue;
    }
    EXPECT_TRUE(with_dtype_rule.insert(r.op).second) << ir::opcode_name(r.op) << " has two dtype rules";
    EXPECT_FALSE(r.dtypes.empty()) << ir::opcode_name(r.op);
    for (DType t : r.dtypes) EXPECT_NE(t, DType::kF32) << ir::opcode_name(r.op);
  }
  EXPECT_EQ(with_dtype_rule.size(), 7u);
  EXPECT_EQ(attribute_rules, 6);
}

const CpuExecutable& cpu_executable(const runtime::Executable& exe) {
  const auto* cpu = dynamic_cast<const CpuExecutable*>(&exe);
  EXPECT_NE(cpu, nullptr);
  return *cpu;
}

TEST(ReferenceFallbacksTest, LoweringMarksAListedFallback) {
  // oneDNN has no f64 matmul: listed.
  auto m = std::make_unique<ir::Module>("f64_matmul");
  ir::Builder b(m->entry());
  auto* x = b.parameter(Shape(DType::kF64, {2, 3}), "x");
  auto* w = b.parameter(Shape(DType::kF64, {3, 4}), "w");
  m->entry()->set_outputs({b.dot_general(x, w, {.lhs_contracting = {1}, .rhs_contracting = {0}})});
  std::unique_ptr<runtime::Executable> exe = make_cpu_backend()->compile(std::move(m), {});
  const std::vector<ReferenceFallback>& steps = cpu_executable(*exe).reference_fallback_steps();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].op, "dot_general");
  EXPECT_FALSE(steps[0].reason.empty());
}

// Compiles `m` on the CPU backend and checks its result on `args` against the reference
// evaluator's, bit for bit (a fallback is the reference evaluator; a kernel here is exact).
std::vector<ReferenceFallback> run_against_reference(std::unique_ptr<ir::Module> m, std::vector<HostTensor> args) {
  std::vector<HostTensor> want = ir::evaluate(*m, args);
  std::unique_ptr<runtime::Executable> exe = make_cpu_backend()->compile(std::move(m), {});
  std::vector<HostTensor> got = exe->run(args);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    std::span<const float> g = got[i].data<float>(), w = want[i].data<float>();
    EXPECT_EQ(std::vector<float>(g.begin(), g.end()), std::vector<float>(w.begin(), w.end()));
  }
  return cpu_executable(*exe).reference_fallback_steps();
}

HostTensor iota_f32(Dims dims) {
  HostTensor t(Shape(DType::kF32, dims));
  std::span<float> v = t.data<float>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  return t;
}

TEST(ReferenceFallbacksTest, ANegativePaddingIsListedByItsAttributeRule) {
  // Verify that a convolution that crops (padding -1) runs on the reference evaluator as a
  // listed fallback in f32, where the dtype rules list nothing.
  auto m = std::make_unique<ir::Module>("crop_conv");
  ir::Builder b(m->entry());
  auto* x = b.parameter(Shape(DType::kF32, {1, 5, 5, 2}), "x");
  auto* w = b.parameter(Shape(DType::kF32, {2, 2, 2, 3}), "w");
  m->entry()->set_outputs({b.convolution(x, w, {.padding_low = {-1, 0}, .padding_high = {0, -1}})});
  std::vector<ReferenceFallback> steps = run_against_reference(std::move(m), {iota_f32({1, 5, 5, 2}), iota_f32({2, 2, 2, 3})});
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].op, "convolution");
  EXPECT_FALSE(steps[0].reason.empty());
}

TEST(ReferenceFallbacksTest, APoolOverChannelsIsListedAndASpatialOneRunsOnOneDnn) {
  // Verify that a max pool whose window spans the channel axis falls back, listed, and that the
  // same pool over H and W runs on its kernel.
  auto pool = [](Dims size) {
    auto m = std::make_unique<ir::Module>("pool");
    ir::Builder b(m->entry());
    auto* x = b.parameter(Shape(DType::kF32, {2, 4, 4, 4}), "x");
    ir::Window w{.size = size, .strides = size, .padding_low = {0, 0, 0, 0}, .padding_high = {0, 0, 0, 0}};
    m->entry()->set_outputs({b.reduce_window(x, ir::ReduceKind::kMax, w)});
    return m;
  };
  std::vector<ReferenceFallback> channels = run_against_reference(pool({1, 2, 2, 2}), {iota_f32({2, 4, 4, 4})});
  ASSERT_EQ(channels.size(), 1u);
  EXPECT_EQ(channels[0].op, "reduce_window");
  EXPECT_FALSE(channels[0].reason.empty());
  EXPECT_TRUE(run_against_reference(pool({1, 2, 2, 1}), {iota_f32({2, 4, 4, 4})}).empty());
}

TEST(ReferenceFallbacksTest, StartsOfMixedIndexDtypesRunOnTheSliceKernel) {
  // Verify that a dynamic_slice whose starts mix i32 and i64 (XLA allows it) runs on the
  // slice kernel, each start read in its own dtype.
  auto m = std::make_unique<ir::Module>("mixed_starts");
  ir::Builder b(m->entry());
  auto* x = b.parameter(Shape(DType::kF32, {4, 3}), "x");
  auto* i = b.parameter(Shape(DType::kI32, {}), "i");
  auto* j = b.parameter(Shape(DType::kI64, {}), "j");
  m->entry()->set_outputs({b.dynamic_slice(x, {i, j}, {2, 2})});
  HostTensor xs = HostTensor::from_vector<float>({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  std::unique_ptr<runtime::Executable> exe = make_cpu_backend()->compile(std::move(m), {});
  EXPECT_TRUE(cpu_executable(*exe).reference_fallback_steps().empty());
  std::vector<HostTensor> args = {xs, HostTensor::scalar<int32_t>(1), HostTensor::scalar<int64_t>(1)};
  std::vector<HostTensor> got = exe->run(args);
  ASSERT_EQ(got.size(), 1u);
  std::span<const float> v = got[0].data<float>();
  EXPECT_EQ(std::vector<float>(v.begin(), v.end()), (std::vector<float>{4, 5, 7, 8}));  // rows 1-2, columns 1-2
}

TEST(ReferenceFallbacksTest, AnOpNoKernelTakesAndNoRuleListsIsACompileError) {
  // Verify that an output fusion around an add (no contraction for a library kernel; no pass
  // makes one, a compiler bug could) is refused with the instruction named, and runs on the
  // reference evaluator, unlisted, under KILN_UNLISTED_FALLBACKS=1.
  auto make = [] {
    auto m = std::make_unique<ir::Module>("output_fusion_of_add");
    ir::Builder b(m->entry());
    auto* x = b.parameter(Shape(DType::kF32, {2, 2}), "x");
    auto* y = b.parameter(Shape(DType::kF32, {2, 2}), "y");
    ir::Instruction* sum = b.binary(ir::Opcode::kAdd, x, y);
    m->entry()->set_outputs({sum});
    compiler::make_fusion(*m->entry(), {sum}, sum, ir::FusionKind::kOutput);
    return m;
  };
  try {
    make_cpu_backend()->compile(make(), {});
    ADD_FAILURE() << "an unlisted fallback compiled";
  } catch (const CompileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("fusion"), std::string::npos) << what;
    EXPECT_NE(what.find("lists no reference fallback"), std::string::npos) << what;
    EXPECT_NE(what.find("KILN_UNLISTED_FALLBACKS=1"), std::string::npos) << what;
  }
  runtime::CompileOptions allow;
  allow.debug.unlisted_fallbacks = true;
  std::unique_ptr<runtime::Executable> exe = make_cpu_backend()->compile(make(), allow);
  const std::vector<ReferenceFallback>& steps = cpu_executable(*exe).reference_fallback_steps();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_TRUE(steps[0].reason.empty());
  std::vector<HostTensor> args = {HostTensor::from_vector<float>({2, 2}, {1, 2, 3, 4}),
                                  HostTensor::from_vector<float>({2, 2}, {10, 20, 30, 40})};
  std::vector<HostTensor> got = exe->run(args);
  ASSERT_EQ(got.size(), 1u);
  std::span<const float> v = got[0].data<float>();
  EXPECT_EQ(std::vector<float>(v.begin(), v.end()), (std::vector<float>{11, 22, 33, 44}));
}

}  // namespace
}  // namespace kiln::cpu
