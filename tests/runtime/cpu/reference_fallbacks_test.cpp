// The CPU backend's list of reference fallbacks (reference_fallbacks.h): its lookups, and the
// lowering marking each fallback as listed or not. The op conformance table checks the list
// against every op and dtype (a fallback it lacks fails there, and so does an entry no case needs).
#include "kiln/runtime/cpu/reference_fallbacks.h"

#include <gtest/gtest.h>

#include <set>

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

TEST(ReferenceFallbacksTest, EachOpHasOneRuleWithReasonAndNoneListsF32) {
  // Every op has an f32 kernel on the CPU; a rule says which other dtypes lack one, and why.
  std::set<Opcode> seen;
  for (const ReferenceFallbackRule& r : reference_fallback_rules()) {
    EXPECT_TRUE(seen.insert(r.op).second) << ir::opcode_name(r.op) << " has two rules";
    EXPECT_FALSE(r.dtypes.empty()) << ir::opcode_name(r.op);
    EXPECT_FALSE(r.reason.empty()) << ir::opcode_name(r.op);
    for (DType t : r.dtypes) EXPECT_NE(t, DType::kF32) << ir::opcode_name(r.op);
  }
  EXPECT_EQ(seen.size(), 7u);
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
  EXPECT_TRUE(steps[0].listed);
}

TEST(ReferenceFallbacksTest, LoweringMarksAndWarnsOfAFallbackTheListLacks) {
  // Verify that a dynamic_slice whose starts mix i32 and i64 (its kernel takes one index dtype)
  // still runs, on the reference evaluator, and that the warning says the list lacks it.
  auto make = [] {
    auto m = std::make_unique<ir::Module>("mixed_starts");
    ir::Builder b(m->entry());
    auto* x = b.parameter(Shape(DType::kF32, {4, 3}), "x");
    auto* i = b.parameter(Shape(DType::kI32, {}), "i");
    auto* j = b.parameter(Shape(DType::kI64, {}), "j");
    m->entry()->set_outputs({b.dynamic_slice(x, {i, j}, {2, 2})});
    return m;
  };
  HostTensor x = HostTensor::from_vector<float>({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  std::vector<HostTensor> args = {x, HostTensor::scalar<int32_t>(1), HostTensor::scalar<int64_t>(1)};
  ::testing::internal::CaptureStderr();
  std::unique_ptr<runtime::Executable> exe = make_cpu_backend()->compile(make(), {});
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  const std::vector<ReferenceFallback>& steps = cpu_executable(*exe).reference_fallback_steps();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].op, "dynamic_slice");
  EXPECT_FALSE(steps[0].listed);
  EXPECT_NE(warnings.find("reference_fallbacks.cpp does not list it"), std::string::npos) << warnings;
  std::vector<HostTensor> got = exe->run(args);
  ASSERT_EQ(got.size(), 1u);
  std::span<const float> v = got[0].data<float>();
  EXPECT_EQ(std::vector<float>(v.begin(), v.end()), (std::vector<float>{4, 5, 7, 8}));  // rows 1-2, columns 1-2
}

}  // namespace
}  // namespace kiln::cpu
