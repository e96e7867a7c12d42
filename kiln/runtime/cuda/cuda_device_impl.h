// CudaDevice (cuda:N): one GPU as a runtime::Device. Memory comes from cuMemAlloc through the
// device's CachingAllocator; host<->device copies go through a ring of pinned staging buffers
// (runtime::StagingRing) on a transfer CUstream, programs run on a compute CUstream.
//
// A host->device copy is issued by the kiln transfer stream's thread (a memcpy into a staging
// slot, cuMemcpyHtoDAsync, a CUevent recorded after it) and its Buffer's ready() event carries
// that CUevent as a DeviceMarker: a program reading the buffer makes the compute CUstream wait
// for it (cuStreamWaitEvent), so the host never blocks on the copy (prefetch_to_device's copy
// of batch N+1 overlaps the step on batch N on the GPU itself). ready() completes, for host
// waiters, from a host function queued after the copy (cuLaunchHostFunc).
#pragma once

#include <cuda.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/runtime/device.h"
#include "kiln/runtime/staging_ring.h"

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
  /// Makes later work of `stream` wait, on the GPU, for the work that writes `buffer`: the
  /// host waits only until that work is issued (a copy's CUevent recorded), or until it is
  /// done where it was not issued to this GPU's queues (another device's buffer).
  void stream_wait_ready(CUstream stream, const runtime::Buffer& buffer) const;

  /// Pinned staging buffers in the ring (copies in flight at once).
  static constexpr int kStagingSlots = 4;

 private:
  class EventPool;
  /// The transfer stream's part of to_device: stage `host`, queue the copy into `memory`,
  /// issue `ready` with the copy's CUevent and queue its completion after the copy.
  void issue_upload(std::shared_ptr<std::byte> memory, const HostTensor& host, const runtime::Event& ready);
  int ordinal_;
  CUdevice cu_device_ = 0;
  CUcontext context_ = nullptr;
  std::string model_;
  int compute_capability_ = 0;
  CUstream transfer_cu_ = nullptr;
  CUstream compute_cu_ = nullptr;
  std::shared_ptr<EventPool> events_;                  // CUevents for copies' ready markers
  std::shared_ptr<runtime::StagingRing> staging_;     // used on the transfer stream's thread only
};

/// The process's cuda:<ordinal>, made on first use and never destroyed (as runtime::host_device()).
CudaDevice& cuda_device(int ordinal);

}  // namespace kiln::cuda
