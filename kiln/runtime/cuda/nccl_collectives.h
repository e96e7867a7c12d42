// NCCL all_reduce among the GPUs of this process: the collectives of a MirroredStrategy whose
// replicas are GPUs (replica r on cuda:ordinals[r]). The cuda backend lowers an all_reduce
// instruction of a program compiled with these collectives to ncclAllReduce on the GPU's
// compute stream. libnccl.so.2 is opened with dlopen on first use, like cuBLASLt and cuDNN.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/runtime/collectives.h"

namespace kiln::cuda {

/// One NCCL communicator per GPU of `ordinals` (ncclCommInitAll). ValueError for fewer than
/// two GPUs or a repeated one; ConfigError "[cuda] NCCL all_reduce over cuda:0, cuda:1: ..."
/// when NCCL (libnccl.so.2), the driver or one of the GPUs is missing.
std::shared_ptr<runtime::Collectives> make_nccl_collectives(const std::vector<int>& ordinals);

/// NCCL's version as loaded ("2.28.3"); ConfigError "[cuda] cannot load NCCL ..." when
/// libnccl.so.2 is missing. Needs no GPU.
std::string nccl_version();

}  // namespace kiln::cuda
