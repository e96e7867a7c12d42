#include "kiln/runtime/cuda/cuda_driver_impl.h"

#include <dlfcn.h>

#include "kiln/core/check.h"

#define KILN_CUDA_STR2(x) #x
#define KILN_CUDA_STR(x) KILN_CUDA_STR2(x)  // after expansion: "cuMemAlloc_v2"

namespace kiln::cuda {
namespace {

struct Loaded {
  Driver driver;
  std::string error;  // empty when usable
};

Loaded load() {
  Loaded l;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    l.error = str_cat("[cuda] no CUDA driver (libcuda.so.1): ", why != nullptr ? why : "dlopen failed",
                      ". Hint: a GPU machine needs the NVIDIA driver; the cpu backend needs none.");
    return l;
  }
  Driver& d = l.driver;
#define KILN_CUDA_DRIVER_LOAD(f)                                                                        \
  d.f = reinterpret_cast<decltype(d.f)>(dlsym(lib, KILN_CUDA_STR(f)));                                  \
  if (d.f == nullptr) {                                                                                 \
    l.error = str_cat("[cuda] no CUDA driver (libcuda.so.1) with ", KILN_CUDA_STR(f),                   \
                      ": the installed driver is older than this build's CUDA ", CUDA_VERSION / 1000, "."); \
    return l;                                                                                           \
  }
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_DRIVER_LOAD)
#undef KILN_CUDA_DRIVER_LOAD
  d.cuDriverGetVersion(&d.version);
  if (const CUresult r = d.cuInit(0); r != CUDA_SUCCESS) {
    const char* name = nullptr;
    d.cuGetErrorName(r, &name);
    l.error = str_cat("[cuda] no CUDA device: cuInit failed with ", name != nullptr ? name : "an unknown error",
                      " (driver version ", d.version, ").");
  }
  return l;
}

}  // namespace

const Driver& driver() {
  // Leaked on purpose: buffers freed by static destructors at exit still reach the driver.
  static const Loaded* const loaded = new Loaded(load());
  if (!loaded->error.empty()) throw ConfigError(loaded->error);
  return loaded->driver;
}

std::string error_text(CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  driver().cuGetErrorName(result, &name);
  driver().cuGetErrorString(result, &text);
  return str_cat(name != nullptr ? name : "CUDA error ", name != nullptr ? "" : std::to_string(result), " (",
                 text != nullptr ? text : "no description", ")");
}

void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) KILN_THROW(InternalError, "[cuda] ", what, " failed: ", error_text(result), ".");
}

void* open_toolkit_library(const std::string& soname, std::string& why) {
  for (const std::string& path : {soname, str_cat(KILN_CUDA_LIBRARY_DIR, "/", soname)}) {
    if (void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
    const char* e = dlerror();
    why += str_cat(why.empty() ? "" : "; ", e != nullptr ? e : path);
  }
  return nullptr;
}

}  // namespace kiln::cuda
