// The GPUs this process can use, found without making a backend: what `kiln devices` lists and
// distribute::auto_detect() reports. Builds without the CUDA backend, machines without a driver
// and machines without a GPU all answer with an empty list and the reason.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/runtime/collectives.h"

namespace kiln::runtime {

struct GpuInfo {
  std::string device;  // "cuda:0"
  std::string model;   // "NVIDIA H200"
  int64_t memory_bytes = 0;
  int compute_capability = 0;  // 90 for 9.0
};

struct GpuSurvey {
  std::vector<GpuInfo> gpus;
  /// Why `gpus` is empty: "this build has no CUDA backend ...", "[cuda] no CUDA driver
  /// (libcuda.so.1): ...", "[cuda] no CUDA device: ...".
  std::string none_because;
};

/// Whether this build has the CUDA backend (KILN_CUDA, cmake/KilnCuda.cmake).
bool cuda_backend_built();
/// Lists the GPUs; never throws (an error becomes none_because).
GpuSurvey find_gpus();
/// NCCL all_reduce among GPUs of this process, replica r on cuda:ordinals[r] (a
/// MirroredStrategy over GPUs). ConfigError without the CUDA backend, NCCL, the driver or one
/// of the GPUs; ValueError for fewer than two distinct GPUs.
std::shared_ptr<Collectives> make_gpu_collectives(const std::vector<int>& ordinals);

}  // namespace kiln::runtime
