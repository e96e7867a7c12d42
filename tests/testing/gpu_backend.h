// The CUDA backend for GPU tests, or a skip naming why there is none (no CUDA backend built,
// no driver, no device), so the `cuda` tests pass through machines without a GPU; and CUDA's
// PTX assembler, which checks generated code where there is no GPU.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "kiln/runtime/backend_registry.h"
#include "kiln/runtime/gpus.h"
#include "tests/testing/temp_dir.h"

namespace kiln::testing {

/// make_backend("cuda") where a GPU is found; otherwise null with `why` set.
inline std::shared_ptr<runtime::Backend> gpu_backend(std::string& why) {
  const runtime::GpuSurvey s = runtime::find_gpus();
  if (s.gpus.empty()) {
    why = s.none_because;
    return nullptr;
  }
  return runtime::make_backend("cuda");
}

/// Runs `ptxas_path` on `ptx` for sm_90 (H100/H200): its exit status, its messages in `log`.
inline int ptxas_sm90(const std::string& ptxas_path, const std::string& ptx, std::string& log) {
  TempDir dir;
  const std::string in = (dir.path() / "kernels.ptx").string(), out = (dir.path() / "ptxas.log").string();
  std::ofstream(in) << ptx;
  const int status = std::system(str_cat(ptxas_path, " -arch=sm_90 ", in, " -o /dev/null > ", out, " 2>&1").c_str());
  std::ifstream f(out);
  log.assign(std::istreambuf_iterator<char>(f), {});
  return status;
}

}  // namespace kiln::testing

/// Declares `backend` (std::shared_ptr<runtime::Backend>) or skips the test: "no CUDA device: <why>".
#define KILN_GPU_BACKEND_OR_SKIP(backend)                                      \
  std::string why_no_gpu_;                                                     \
  std::shared_ptr<::kiln::runtime::Backend> backend = ::kiln::testing::gpu_backend(why_no_gpu_); \
  if (backend == nullptr) GTEST_SKIP() << "no CUDA device: " << why_no_gpu_
