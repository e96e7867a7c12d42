// NCCL all_reduce among GPUs: those of this process (a MirroredStrategy whose replicas are
// GPUs, replica r on cuda:ordinals[r]) or one GPU in each process of a multi-worker job
// (MultiWorkerMirroredStrategy over GPUs, the NCCL id passed over MPI). The cuda backend lowers an all_reduce
// instruction of a program compiled with these collectives to ncclAllReduce on the GPU's
// compute stream. libnccl.so.2 is opened with dlopen on first use, like cuBLASLt and cuDNN.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/runtime/collectives.h"
#include "kiln/runtime/gpus.h"

namespace kiln::cuda {

/// One NCCL communicator per GPU of `ordinals` (ncclCommInitAll). ValueError for fewer than
/// two GPUs or a repeated one; ConfigError "[cuda] NCCL all_reduce over cuda:0, cuda:1: ..."
/// when NCCL (libnccl.so.2), the driver or one of the GPUs is missing.
std::shared_ptr<runtime::Collectives> make_nccl_collectives(const std::vector<int>& ordinals);

/// NCCL across processes, one GPU each (runtime::make_gpu_collectives_across_processes).
std::shared_ptr<runtime::Collectives> make_nccl_collectives_across_processes(int ordinal, int rank, int num_ranks,
                                                                             const runtime::CollectivesIdExchange& exchange);
/// ncclGetUniqueId's bytes (NCCL_UNIQUE_ID_BYTES of them); needs NCCL, not a GPU.
std::vector<uint8_t> nccl_unique_id();

/// NCCL's version as loaded ("2.28.3"); ConfigError "[cuda] cannot load NCCL ..." when
/// libnccl.so.2 is missing. Needs no GPU.
std::string nccl_version();

}  // namespace kiln::cuda
