#include "kiln/runtime/gpus.h"

#include <exception>

#if KILN_HAVE_CUDA
#include "kiln/runtime/cuda/cuda_backend.h"
#include "kiln/runtime/cuda/nccl_collectives.h"
#else
#include "kiln/core/check.h"
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

std::shared_ptr<Collectives> make_gpu_collectives(const std::vector<int>& ordinals) {
#if KILN_HAVE_CUDA
  return cuda::make_nccl_collectives(ordinals);
#else
  (void)ordinals;
  KILN_THROW(ConfigError, "[make_gpu_collectives] this build has no CUDA backend (configure with -DKILN_CUDA=ON on a "
             "machine with the CUDA toolkit).");
#endif
}

std::shared_ptr<Collectives> make_gpu_collectives_across_processes(int ordinal, int rank, int num_ranks,
                                                                   const CollectivesIdExchange& exchange) {
#if KILN_HAVE_CUDA
  return cuda::make_nccl_collectives_across_processes(ordinal, rank, num_ranks, exchange);
#else
  (void)ordinal, (void)rank, (void)num_ranks;
  const char* why = "this build has no CUDA backend (configure with -DKILN_CUDA=ON on a machine with the CUDA toolkit)";
  exchange(why, {});  // the other processes learn it too
  KILN_THROW(ConfigError, "[make_gpu_collectives_across_processes] ", why, ".");
#endif
}

std::vector<uint8_t> new_gpu_collectives_id() {
#if KILN_HAVE_CUDA
  return cuda::nccl_unique_id();
#else
  KILN_THROW(ConfigError, "[new_gpu_collectives_id] this build has no CUDA backend (configure with -DKILN_CUDA=ON on a "
             "machine with the CUDA toolkit).");
#endif
}

}  // namespace kiln::runtime
