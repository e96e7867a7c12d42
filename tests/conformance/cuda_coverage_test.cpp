// The op conformance table's CUDA column. Without a GPU: every row x dtype goes through the
// cuda backend's passes and lowering (lower_to_ptx, the lowering compile() runs on a GPU), and
// CUDA's ptxas accepts every module that lowers. A row the backend cannot lower must be listed
// in kKnownCudaGaps with the reason, and every listed gap must still be one, so the list is
// what the GPU does not run. On a GPU (scripts/device_check.sh): every row that lowers gives
// the reference evaluator's values, and every differentiable row's gradient, traced and run on
// the GPU in f64, matches central differences run there too.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "kiln/compiler/default_pipeline.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/runtime/cuda/cuda_backend.h"
#include "kiln/trace/vjp/vjp.h"
#include "tests/conformance/op_cases.h"
#include "tests/testing/gpu_backend.h"

namespace kiln::conformance {
namespace {

struct KnownGap {
  std::set<DType> dtypes;
  std::string_view reason;  // part of the CompileError's text
};

const std::set<DType> kNotCudnn = {DType::kF64, DType::kI32, DType::kI64, DType::kU8, DType::kBool};
const std::set<DType> kIntegers = {DType::kI32, DType::kI64, DType::kU8, DType::kBool};
constexpr std::string_view kCudnnConvTypes = "cuDNN convolutions here take and give one of f32, bf16, f16";
constexpr std::string_view kCudnnPoolTypes = "cuDNN pools f32, bf16 and f16";

// Rows the cuda backend refuses, by row name, with a part of the CompileError it gives. The
// library-dtype gaps match the CPU's listed fallbacks (kiln/runtime/cpu/reference_fallbacks.cpp),
// which run on the reference evaluator there: the GPU has no host fallback.
const std::map<std::string, KnownGap> kKnownCudaGaps = {
    {"convolution", {kNotCudnn, kCudnnConvTypes}},
    {"conv_backward_input", {kNotCudnn, kCudnnConvTypes}},
    {"conv_backward_filter", {kNotCudnn, kCudnnConvTypes}},
    {"dot_general", {kIntegers, "cuBLASLt multiplies f32, bf16, f16 or f64 operands of one dtype"}},
    {"reduce_window(max)", {kNotCudnn, kCudnnPoolTypes}},
    {"reduce_window_grad(max)", {kNotCudnn, kCudnnPoolTypes}},
    {"reduce_window(mean)", {{DType::kF64}, kCudnnPoolTypes}},
    {"reduce_window_grad(mean)", {{DType::kF64}, kCudnnPoolTypes}},
};

// Whether `error` (a CompileError's text) is a listed gap of `row` in `t`; with `row` empty,
// of any row in `t` (a gradient program holds other rows' ops).
bool is_listed_gap(const std::string& row, DType t, const std::string& error) {
  for (const auto& [name, gap] : kKnownCudaGaps)
    if ((row.empty() || row == name) && gap.dtypes.count(t) && error.find(gap.reason) != std::string::npos) return true;
  return false;
}

TEST(CudaCoverageTest, EveryRowLowersForSm90OrIsAListedGap) {
  const compiler::AcceptAllTarget target("cuda", int64_t{80} << 30, 256);  // as CudaBackend
  const bool have_ptxas = std::filesystem::exists(KILN_CUDA_PTXAS);
  std::map<std::string, std::string> refused;  // "<row> <dtype>" -> the error
  std::set<std::string> gaps_seen;
  int lowered = 0;
  for (const OpCase& c : op_cases()) {
    for (DType t : c.dtypes) {
      const std::string where = str_cat(c.name, " ", t);
      std::unique_ptr<ir::Module> m = c.module(t);
      std::string ptx;
      try {
        compiler::check_and_optimize(*m, target, {}, where);
        ptx = cuda::lower_to_ptx(*m, 90);
      } catch (const CompileError& e) {
        if (is_listed_gap(c.name, t, e.what())) {
          gaps_seen.insert(where);
          continue;
        }
        refused[where] = e.what();
        continue;
      }
      ++lowered;
      auto gap = kKnownCudaGaps.find(c.name);
      EXPECT_FALSE(gap != kKnownCudaGaps.end() && gap->second.dtypes.count(t))
          << where << " lowers now: remove it from kKnownCudaGaps";
      if (!have_ptxas || ptx.empty()) continue;
      std::string log;
      EXPECT_EQ(testing::ptxas_sm90(KILN_CUDA_PTXAS, ptx, log), 0) << where << ": ptxas refuses the PTX:\n" << log;
    }
  }
  for (const auto& [where, error] : refused)
    ADD_FAILURE() << where << " does not lower for the GPU and kKnownCudaGaps does not list it: " << error;
  std::cout << "[ cuda     ] " << lowered << " row x dtype cases lower for sm_90, " << gaps_seen.size()
            << " listed gaps" << (have_ptxas ? "" : " (no ptxas: PTX not checked)") << "\n";
}

TEST(CudaConformanceTest, EveryRowThatLowersGivesTheReferenceValuesOnTheGpu) {
  KILN_GPU_BACKEND_OR_SKIP(gpu);
  int cases = 0, gaps = 0;
  for (const OpCase& c : op_cases()) {
    for (DType t : c.dtypes) {
      const std::string where = str_cat(c.name, " ", t);
      std::vector<HostTensor> args = c.arguments(t);
      const std::vector<HostTensor> expected = ir::evaluate(*c.module(t), args);
      std::unique_ptr<runtime::Executable> exe;
      try {
        exe = gpu->compile(c.module(t), {});
      } catch (const CompileError& e) {
        EXPECT_TRUE(is_listed_gap(c.name, t, e.what())) << where << ": " << e.what();
        ++gaps;
        continue;
      }
      ++cases;
      try {
        std::vector<HostTensor> actual = exe->run(args);
        ASSERT_EQ(actual.size(), expected.size()) << where;
        for (size_t k = 0; k < actual.size(); ++k)
          EXPECT_EQ(compare_values(actual[k], expected[k], c.tolerance(t)), "")
              << where << ", shape variant " << k << " " << c.describe_variant(k, t) << "\n" << exe->describe();
      } catch (const Error& e) {
        ADD_FAILURE() << where << " throws " << e.kind() << ": " << e.what() << "\n" << exe->describe();
      }
    }
  }
  std::cout << "[ cuda     ] " << cases << " row x dtype cases on the GPU, " << gaps << " listed gaps\n";
}

TEST(CudaConformanceTest, GradientsMatchFiniteDifferencesOnTheGpu) {
  KILN_GPU_BACKEND_OR_SKIP(gpu);
  constexpr int64_t kMaxElements = 256;  // as op_conformance_test: two runs per element
  int checked = 0, gaps = 0;
  for (const OpCase& c : op_cases()) {
    // Rows op_conformance_test checks gradients for: those with a VJP rule.
    if (c.values_only || !c.gradient_error.empty() || trace::find_vjp(c.op) == nullptr) continue;
    for (size_t k = 0; k < c.variants.size(); ++k) {
      std::vector<HostTensor> inputs = c.gradient_arguments(k);
      int64_t elements = 0;
      for (const HostTensor& x : inputs) elements += x.num_elements();
      if (elements > kMaxElements || elements == 0) continue;
      bool differentiable = false;
      for (const HostTensor& x : inputs) differentiable = differentiable || is_floating(x.dtype());
      if (!differentiable) continue;
      const std::string where = str_cat(c.name, ", shape variant ", k, " ", c.describe_variant(k, DType::kF64));
      testing::GradCheckOptions options = c.grad_options;
      options.backend = gpu;
      try {
        EXPECT_TRUE(testing::check_gradients([&c, k](const std::vector<Tensor>& xs) { return c.apply(k, xs); }, inputs,
                                             options))
            << where;
        ++checked;
      } catch (const CompileError& e) {
        EXPECT_TRUE(is_listed_gap("", DType::kF64, e.what())) << where << ": " << e.what();
        ++gaps;
      } catch (const Error& e) {
        ADD_FAILURE() << where << ": the gradient check throws " << e.kind() << ": " << e.what();
      }
    }
  }
  std::cout << "[ cuda     ] " << checked << " gradients on the GPU against central differences, " << gaps
            << " with an op the GPU lacks in f64\n";
}

}  // namespace
}  // namespace kiln::conformance
