// Checks shared by the end-to-end tests of whole train steps on the CUDA backend.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "kiln/runtime/cuda/cuda_backend.h"
#include "kiln/trace/variable.h"
#include "tests/testing/gpu_backend.h"
#include "tests/testing/random_image_batch.h"

namespace kiln::testing {

/// Without a GPU: every op of `step` (a program the CPU backend compiled; both backends run
/// the same passes) has a GPU kernel, and `ptxas` (when present) accepts the PTX for sm_90.
inline void expect_step_lowers_for_sm90(const runtime::Executable* step, const std::string& ptxas) {
  ASSERT_NE(step, nullptr);
  ASSERT_NE(step->lowered_module(), nullptr);
  const std::string ptx = cuda::lower_to_ptx(*step->lowered_module(), 90);
  EXPECT_NE(ptx.find(".entry"), std::string::npos);
  if (!std::filesystem::exists(ptxas)) GTEST_SKIP() << "no ptxas at " << ptxas;
  std::string log;
  EXPECT_EQ(ptxas_sm90(ptxas, ptx, log), 0) << log;
}

/// Every element of the variables `a` and `b` (the same model trained on two backends) within `tol`.
inline void expect_same_variables(const std::vector<Variable>& a, const std::vector<Variable>& b, float tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const std::vector<float> va = a[i].storage().to_vector<float>();
    const std::vector<float> vb = b[i].storage().to_vector<float>();
    ASSERT_EQ(va.size(), vb.size()) << a[i].name();
    for (size_t j = 0; j < va.size(); ++j) ASSERT_NEAR(va[j], vb[j], tol) << a[i].name() << "[" << j << "]";
  }
}

}  // namespace kiln::testing
