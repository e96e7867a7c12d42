// CudaDevice (cuda:N): one GPU as a runtime::Device. Memory comes from cuMemAlloc through the
// device's CachingAllocator; host<->device copies go through pinned staging memory on a
// transfer CUstream, programs run on a compute CUstream. Each kiln Stream work item issues its
// CUDA work and completes when a CUevent recorded after it has fired, so a Buffer's ready()
// means the GPU has finished writing it.
#pragma once

#include <cuda.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/runtime/device.h"

namespace kiln::cuda {

class CudaDevice final : public runtime::Device {
 public:
  /// GPU `ordinal` through its primary context (ConfigError when there is no driver or GPU).
  explicit CudaDevice(int ordinal);
  bool host_addressable() const override { return false; }
  runtime::Buffer to_device(const HostTensor& host) override;
  HostTensor to_host(const runtime::Buffer& buffer) override;
  /// Runs a program compiled by the cuda backend on the calling thread's view of the compute
  /// CUstream; the outputs are ready when it returns.
  std::vector<runtime::Buffer> execute(runtime::Executable& program,
                                       std::span<const runtime::Buffer> arguments) override;

  int ordinal() const { return ordinal_; }
  /// "NVIDIA H200"
  const std::string& model() const { return model_; }
  /// 90 for compute capability 9.0.
  int compute_capability() const { return compute_capability_; }
  /// Makes this GPU's context current on the calling thread (CUDA contexts are per thread).
  void make_current() const;
  CUstream compute_cu_stream() const { return compute_cu_; }
  /// Blocks until the work queued on `stream` so far has run (a CUevent, so other streams go on).
  void wait_cu_stream(CUstream stream) const;

 private:
  struct Staging;
  int ordinal_;
  CUdevice cu_device_ = 0;
  CUcontext context_ = nullptr;
  std::string model_;
  int compute_capability_ = 0;
  CUstream transfer_cu_ = nullptr;
  CUstream compute_cu_ = nullptr;
  std::shared_ptr<Staging> staging_;  // pinned host memory, used on the transfer stream only
};

/// The process's cuda:<ordinal>, made on first use and never destroyed (as runtime::host_device()).
CudaDevice& cuda_device(int ordinal);

}  // namespace kiln::cuda
