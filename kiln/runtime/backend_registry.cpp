// Backend registry.
#include "kiln/runtime/backend_registry.h"

#include <charconv>

#include "kiln/core/check.h"
#include "kiln/runtime/cpu/cpu_backend.h"
#include "kiln/runtime/reference/reference_backend.h"
#if KILN_HAVE_CUDA
#include "kiln/runtime/cuda/cuda_backend.h"
#endif

namespace kiln::runtime {

std::vector<std::string> available_backends() {
  if (KILN_HAVE_CUDA) return {"cpu", "reference", "cuda"};
  return {"cpu", "reference"};
}

std::shared_ptr<Backend> make_backend(std::string_view name) {
  if (name == "cpu") return cpu::make_cpu_backend();
  if (name == "reference") return make_reference_backend();
  // "cuda" is cuda:0; "cuda:N" the GPU of ordinal N.
  const bool gpu = name == "cuda" || name.starts_with("cuda:");
  int ordinal = 0;
  if (name.starts_with("cuda:")) {
    const std::string_view digits = name.substr(5);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), ordinal);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() || ordinal < 0)
      KILN_THROW(ConfigError, "[make_backend] '", name, "' is not a GPU: expected cuda or cuda:N (N = 0, 1, ...).");
  }
#if KILN_HAVE_CUDA
  if (gpu) return cuda::make_cuda_backend(ordinal);  // ConfigError without a driver or that GPU
#else
  if (gpu)
    KILN_THROW(ConfigError, "[make_backend] this build has no CUDA backend: configure with -DKILN_CUDA=ON on a machine "
               "with the CUDA toolkit. The backends are ", str_join(available_backends(), ", "), ".");
#endif
  KILN_THROW(ConfigError, "[make_backend] unknown backend '", name, "'. Hint: use one of ",
             str_join(available_backends(), ", "), ".");
}

std::shared_ptr<Backend> default_backend() { return make_backend("cpu"); }

}  // namespace kiln::runtime
