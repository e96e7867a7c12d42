// GPU discovery answers on every machine: with the GPUs it found, or with the reason there are
// none (no CUDA backend built, no driver, no device), and make_backend("cuda") fails with that
// same reason. The expected branch is found independently of Kiln: whether this build has the
// backend, and whether dlopen finds the driver.
#include "kiln/runtime/gpus.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "kiln/runtime/backend_registry.h"

namespace kiln::runtime {
namespace {

bool driver_loadable() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib != nullptr) dlclose(lib);
  return lib != nullptr;
}

std::string make_cuda_error() {
  try {
    make_backend("cuda");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(GpusTest, EitherListsGpusOrSaysWhyNone) {
  const GpuSurvey s = find_gpus();
  if (!cuda_backend_built()) {
    EXPECT_TRUE(s.gpus.empty());
    EXPECT_NE(s.none_because.find("no CUDA backend"), std::string::npos) << s.none_because;
    EXPECT_NE(s.none_because.find("-DKILN_CUDA=ON"), std::string::npos) << s.none_because;
  } else if (!driver_loadable()) {
    EXPECT_TRUE(s.gpus.empty());
    EXPECT_NE(s.none_because.find("no CUDA driver (libcuda.so.1)"), std::string::npos) << s.none_because;
  } else if (s.gpus.empty()) {
    EXPECT_NE(s.none_because.find("no CUDA device"), std::string::npos) << s.none_because;
  } else {
    for (size_t i = 0; i < s.gpus.size(); ++i) {
      EXPECT_EQ(s.gpus[i].device, str_cat("cuda:", i));
      EXPECT_FALSE(s.gpus[i].model.empty());
      EXPECT_GT(s.gpus[i].memory_bytes, int64_t{1} << 30);
      EXPECT_GE(s.gpus[i].compute_capability, 50);
    }
  }
}

TEST(GpusTest, MakeBackendCudaFailsWithTheSameReasonWhenThereIsNoGpu) {
  const GpuSurvey s = find_gpus();
  const std::vector<std::string> names = available_backends();
  EXPECT_EQ(std::find(names.begin(), names.end(), "cuda") != names.end(), cuda_backend_built());
  if (!s.gpus.empty()) GTEST_SKIP() << "this machine has a GPU: the cuda tests cover it";
  const std::string error = make_cuda_error();
  ASSERT_FALSE(error.empty()) << "make_backend(\"cuda\") must throw a ConfigError without a GPU";
  const std::string reason = cuda_backend_built() ? s.none_because : "no CUDA backend";
  EXPECT_NE(error.find(reason), std::string::npos) << error << "\nreason: " << reason;
}

}  // namespace
}  // namespace kiln::runtime
