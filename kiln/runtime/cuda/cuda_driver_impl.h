// The CUDA driver API, opened with dlopen from libcuda.so.1 on first use, so Kiln links no CUDA
// library and starts on machines without a driver. cuda.h supplies the types; the names below
// are cuda.h's macros (cuMemAlloc is cuMemAlloc_v2), so each entry point is the versioned
// symbol the header would have linked.
#pragma once

#include <cuda.h>

#include <string>

namespace kiln::cuda {

#define KILN_CUDA_DRIVER_FUNCTIONS(X)                                                                       \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) \
  X(cuDeviceGetName) X(cuDeviceTotalMem) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain)               \
  X(cuCtxSetCurrent) X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)         \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemcpy3DAsync) X(cuMemsetD8Async)     \
  X(cuMemsetD16Async) X(cuMemsetD32Async) X(cuStreamCreate) X(cuStreamSynchronize) X(cuStreamWaitEvent)    \
  X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventDestroy) X(cuLaunchHostFunc)            \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuLaunchKernel)

/// The driver's entry points (members named as cuda.h names the functions).
struct Driver {
#define KILN_CUDA_DRIVER_MEMBER(f) decltype(&::f) f = nullptr;
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_DRIVER_MEMBER)
#undef KILN_CUDA_DRIVER_MEMBER
  int version = 0;  // cuDriverGetVersion: 13000 for CUDA 13.0
};

/// The driver, loaded and initialized (cuInit) once. ConfigError "no CUDA driver
/// (libcuda.so.1) ..." where the library is missing or too old, "no CUDA device: ..." where
/// cuInit fails (no GPU, driver not loaded); the same error on every call.
const Driver& driver();

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
std::string error_text(CUresult result);
/// Throws InternalError "[cuda] <what> failed: <error_text>" unless `result` is CUDA_SUCCESS.
void check(CUresult result, const char* what);

/// dlopen of one of the toolkit's libraries (cuBLASLt, cuDNN, NCCL): `soname` first
/// (LD_LIBRARY_PATH, the system's paths), then in the toolkit this build found. Null with the
/// loader's messages appended to `why` when neither opens.
void* open_toolkit_library(const std::string& soname, std::string& why);

}  // namespace kiln::cuda
