#include "kiln/runtime/gpus.h"

#include <exception>

#if KILN_HAVE_CUDA
#include "kiln/runtime/cuda/cuda_backend.h"
#endif

namespace kiln::runtime {

bool cuda_backend_built() { return KILN_HAVE_CUDA != 0; }

GpuSurvey find_gpus() {
#if KILN_HAVE_CUDA
  try {
    return cuda::survey_gpus();
  } catch (const std::exception& e) {
    return {{}, e.what()};
  }
#else
  return {{}, "this build has no CUDA backend (configure with -DKILN_CUDA=ON on a machine with the CUDA toolkit)"};
#endif
}

}  // namespace kiln::runtime
