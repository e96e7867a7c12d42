// Lowering for the GPU: each entry instruction of an optimized module becomes CudaSteps.
#pragma once

#include "kiln/runtime/backend.h"
#include "kiln/runtime/cuda/cuda_device_impl.h"
#include "kiln/runtime/cuda/cuda_executable_impl.h"

namespace kiln::cuda {

/// Lowers `exe`'s module (after the compiler's passes) for `device`: fused loops and
/// elementwise ops to one PTX module from the code generator (cached on disk by the loops'
/// keys, like the CPU kernels), matmuls to cuBLASLt. CompileError naming every op it cannot
/// run, and the backend, before anything runs; there is no fallback to the host.
void lower(CudaExecutable& exe, CudaDevice& device, const runtime::CompileOptions& options);

}  // namespace kiln::cuda
