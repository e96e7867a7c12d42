// The GPUs this process can use, found without making a backend: what `kiln devices` lists and
// distribute::auto_detect() reports. Builds without the CUDA backend, machines without a driver
// and machines without a GPU all answer with an empty list and the reason.
#pragma once

#include <cstdint>
#include <functional>
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

/// How the processes of a multi-worker job agree on NCCL's id (distribute/ passes one over
/// MPI). Every process calls it once with why it cannot take part ("" when it can); it returns
/// the bytes rank 0 made with `make_id`, the same on every process, or throws ConfigError on
/// every process when one of them cannot take part (so none is left waiting for the others).
using CollectivesIdExchange = std::function<std::vector<uint8_t>(
    const std::string& why_not, const std::function<std::vector<uint8_t>()>& make_id)>;
/// NCCL all_reduce across the processes of a multi-worker job (MultiWorkerMirroredStrategy
/// over GPUs): this process's one replica, on cuda:`ordinal`, is rank `rank` of `num_ranks`
/// (ncclCommInitRank). Checks that NCCL and the GPU are there, then joins through `exchange`
/// (which it calls in every case, so a process that cannot join fails every process), and
/// blocks until every rank joined. ConfigError as make_gpu_collectives.
std::shared_ptr<Collectives> make_gpu_collectives_across_processes(int ordinal, int rank, int num_ranks,
                                                                   const CollectivesIdExchange& exchange);
/// A new NCCL unique id (ncclGetUniqueId: the bytes rank 0 sends the others; needs NCCL, not a
/// GPU). ConfigError without the CUDA backend or NCCL.
std::vector<uint8_t> new_gpu_collectives_id();

}  // namespace kiln::runtime
