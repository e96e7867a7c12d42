// Backend registry.
#include "kiln/runtime/backend_registry.h"

#include "kiln/core/check.h"
#include "kiln/runtime/cpu/cpu_backend.h"
#include "kiln/runtime/reference/reference_backend.h"

namespace kiln::runtime {

std::vector<std::string> available_backends() { return {"cpu", "reference"}; }

std::shared_ptr<Backend> make_backend(std::string_view name) {
  if (name == "cpu") return cpu::make_cpu_backend();
  if (name == "reference") return make_reference_backend();
  if (name == "cuda")
    KILN_THROW(ConfigError, "[make_backend] Kiln has no CUDA backend yet (issue 17); the backends are ",
               str_join(available_backends(), ", "), ".");
  KILN_THROW(ConfigError, "[make_backend] unknown backend '", name, "'. Hint: use one of ",
             str_join(available_backends(), ", "), ".");
}

std::shared_ptr<Backend> default_backend() { return make_backend("cpu"); }

}  // namespace kiln::runtime
