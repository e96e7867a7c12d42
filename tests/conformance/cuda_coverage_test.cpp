// The op conformance table's CUDA column without a GPU: every row x dtype goes through the cuda
// backend's passes and lowering (lower_to_ptx, the lowering compile() runs on a GPU), and
// CUDA's ptxas accepts every module that lowers. A row the backend cannot lower must be listed
// in kKnownCudaGaps with the reason, and every listed gap must still be one, so the list is
// what the GPU does not run. On a GPU, op_conformance_test runs the same rows for values.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "kiln/compiler/default_pipeline.h"
#include "kiln/runtime/cuda/cuda_backend.h"
#include "tests/conformance/op_cases.h"
#include "tests/testing/gpu_backend.h"

namespace kiln::conformance {
namespace {

struct KnownGap {
  std::set<DType> dtypes;
  std::string_view reason;  // part of the CompileError's text
};

const std::set<DType> kAllDTypes = {DType::kF32, DType::kBF16, DType::kF16, DType::kF64,
                                     DType::kI32, DType::kI64, DType::kU8, DType::kBool};
const std::set<DType> kNotCudnn = {DType::kF64, DType::kI32, DType::kI64, DType::kU8, DType::kBool};
const std::set<DType> kIntegers = {DType::kI32, DType::kI64, DType::kU8, DType::kBool};
constexpr std::string_view kCudnnConvTypes = "cuDNN convolutions here take and give one of f32, bf16, f16";
constexpr std::string_view kCudnnPoolTypes = "cuDNN pools f32, bf16 and f16";

// Rows the cuda backend refuses, by row name, with a part of the CompileError it gives. The
// library-dtype gaps match the CPU's allowed fallbacks (op_conformance_test's
// kAllowedFallbacks), which run on the reference evaluator there: the GPU has no host fallback.
const std::map<std::string, KnownGap> kKnownCudaGaps = {
    {"convolution", {kNotCudnn, kCudnnConvTypes}},
    {"conv_backward_input", {kNotCudnn, kCudnnConvTypes}},
    {"conv_backward_filter", {kNotCudnn, kCudnnConvTypes}},
    {"dot_general", {kIntegers, "cuBLASLt multiplies f32, bf16, f16 or f64 operands of one dtype"}},
    {"reduce_window(max)", {kNotCudnn, kCudnnPoolTypes}},
    {"reduce_window_grad(max)", {kNotCudnn, kCudnnPoolTypes}},
    {"reduce_window(mean)", {{DType::kF64}, kCudnnPoolTypes}},
    {"reduce_window_grad(mean)", {{DType::kF64}, kCudnnPoolTypes}},
    // Not built yet (docs/devices.md, "Not built yet").
    {"reduce_sum", {kAllDTypes, "no kernel yet for reduce_sum"}},  // axes {0, 2}: not consecutive
    {"reduce_max", {kAllDTypes, "no kernel yet for reduce_max"}},
    {"reduce_min", {kAllDTypes, "no kernel yet for reduce_min"}},
    {"concatenate", {kAllDTypes, "no kernel yet for concatenate"}},
    {"pad", {kAllDTypes, "no kernel yet for pad"}},
    {"gather", {kAllDTypes, "no kernel yet for gather"}},
    {"scatter_add", {kAllDTypes, "no kernel yet for scatter_add"}},
    {"dynamic_slice", {kAllDTypes, "no kernel yet for dynamic_slice"}},
    {"dynamic_update_slice", {kAllDTypes, "no kernel yet for dynamic_update_slice"}},
    {"while", {kAllDTypes, "no kernel yet for get_tuple_element (x2), while"}},
    {"conditional(pred)", {kAllDTypes, "no kernel yet for conditional"}},
    {"conditional(index)", {kAllDTypes, "no kernel yet for conditional"}},
    {"get_tuple_element", {kAllDTypes, "no kernel yet for conditional"}},
};

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
        auto gap = kKnownCudaGaps.find(c.name);
        if (gap != kKnownCudaGaps.end() && gap->second.dtypes.count(t) &&
            std::string(e.what()).find(gap->second.reason) != std::string::npos) {
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

}  // namespace
}  // namespace kiln::conformance
