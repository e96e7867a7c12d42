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
//
// Programs run the same way: execute queues the steps and returns; the outputs' ready event
// carries a CUevent recorded after the step. Memory is stream-ordered (caching_allocator.h):
// what the step uses is recorded as used by the compute stream until that event, so later
// steps reuse it at once and copies or the host only after the step completed.
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
  /// Queues a program compiled by the cuda backend on the compute CUstream and returns; the
  /// outputs' ready event completes when it has run (CudaExecutable::execute).
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

  /// The compute stream's id in the caching allocator's stream order (the host is 0).
  static constexpr int kComputeOrder = 1;
  /// Uninitialized memory for work queued on the compute stream: possibly a block earlier
  /// compute work still uses, which stream order keeps apart.
  runtime::Buffer allocate_for_compute(const Shape& shape);
  /// An Event that completes once the work queued on the compute stream so far has run: a
  /// CUevent recorded now (what the GPU waits on) and a host function that completes it for
  /// host waiters. `label` names that work when its error surfaces (wait_on_host).
  runtime::Event record_compute_done(const std::string& label);
  /// `buffer` is used by compute work that completes `done`: once freed, its block goes to the
  /// transfer stream or the host only after `done`.
  void record_compute_use(const runtime::Buffer& buffer, const runtime::Event& done);
  /// Blocks until `event` completed. Where it carries a CUevent, waits on that: an error of
  /// the GPU work (after which host functions no longer run) throws here, naming the work.
  void wait_on_host(const runtime::Event& event) const;

  /// Pinned staging buffers in the ring (copies in flight at once).
  static constexpr int kStagingSlots = 4;

 private:
  class EventPool;
  /// The transfer stream's part of to_device: stage `host`, queue the copy into `memory`,
  /// issue `ready` with the copy's CUevent and queue its completion after the copy.
  void issue_upload(std::shared_ptr<std::byte> memory, const HostTensor& host, const runtime::Event& ready);
  /// Issues `ready` with a CUevent recorded on `stream` now and queues its completion there.
  void issue_and_complete(const runtime::Event& ready, CUstream stream, const std::string& label);
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
