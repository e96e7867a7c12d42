// Device: one place programs run and buffers live (cpu:0, a GPU, the guarded test device).
// It owns its memory (a caching allocator), a transfer stream for host<->device copies and a
// compute stream for programs, so the next batch can be copied while a step runs (the input
// pipeline's prefetch_to_device, the TPU infeed's role).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/runtime/buffer.h"
#include "kiln/runtime/caching_allocator.h"
#include "kiln/runtime/stream.h"

namespace kiln::runtime {

class Executable;

class Device {
 public:
  virtual ~Device() = default;

  /// "cpu:0", "guarded_cpu:0", "cuda:0".
  const std::string& name() const { return name_; }
  /// True where host code may read the device's memory in place (host_view works).
  virtual bool host_addressable() const = 0;
  int64_t memory_bytes() const { return allocator_->limit_bytes(); }
  AllocatorStats allocator_stats() const { return allocator_->stats(); }
  void empty_cache() { allocator_->empty_cache(); }

  /// Uninitialized device memory for `shape` (OutOfMemoryError when it does not fit).
  Buffer allocate(const Shape& shape);
  /// `host`'s values on this device: a copy queued on the transfer stream (the Buffer's ready
  /// event says when it is done; `host` is kept alive until then and must not change), or on a
  /// host-addressable device the same memory, no copy.
  virtual Buffer to_device(const HostTensor& host);
  /// A host copy of `buffer` (after its ready event), on every device: it never aliases the
  /// buffer, so later device work cannot change it.
  virtual HostTensor to_host(const Buffer& buffer);
  /// `buffer`'s memory as a host tensor, no copy; ValueError on a device that is not
  /// host-addressable (use to_host).
  HostTensor host_view(const Buffer& buffer);
  /// Runs `program` (compiled by this device's backend) over `arguments`, in parameter order,
  /// after their ready events. Outputs aliased to a parameter are that argument's buffer,
  /// updated in place (variables stay on the device between steps); the others are new buffers.
  virtual std::vector<Buffer> execute(Executable& program, std::span<const Buffer> arguments) = 0;

  Stream& transfer_stream() { return *transfer_; }
  Stream& compute_stream() { return *compute_; }

 protected:
  Device(std::string name, std::unique_ptr<CachingAllocator> allocator, bool asynchronous_streams);
  /// ValueError unless `buffer` lives on this device.
  void check_owned(const Buffer& buffer, const char* operation) const;

  /// Bracket the device's own reads and writes of its memory (copies, programs). A device
  /// whose memory host code must not touch (the guarded arena) makes it accessible here; calls
  /// nest and may overlap (the transfer and compute streams run at once). No-ops by default.
  virtual void open_memory() {}
  virtual void close_memory() {}
  /// Holds the memory open for a scope.
  class MemoryAccess {
   public:
    explicit MemoryAccess(Device& device) : device_(device) { device_.open_memory(); }
    ~MemoryAccess() { device_.close_memory(); }
    MemoryAccess(const MemoryAccess&) = delete;
    MemoryAccess& operator=(const MemoryAccess&) = delete;

   private:
    Device& device_;
  };

  std::string name_;
  std::unique_ptr<CachingAllocator> allocator_;
  std::unique_ptr<Stream> transfer_;
  std::unique_ptr<Stream> compute_;
};

}  // namespace kiln::runtime
