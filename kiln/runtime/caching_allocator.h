// CachingAllocator: a device's memory, kept by size class after it is freed so the steady
// state of a training loop (the same batch buffers every step) never calls the device's
// allocator, as PyTorch's CUDA caching allocator and XLA's BFC allocator do. The memory itself
// comes from a MemoryResource (host pages, a guarded arena, cuMemAlloc).
//
// Stream order (PyTorch's recordStream, cudaMallocAsync's rule): a block may carry uses, work
// queued on a device stream that completes an Event. Once freed, it is handed at once to later
// requests of that same stream (the stream runs its work in order, so the new work starts after
// the old), but to another stream or the host only after those uses' events completed. Blocks
// without uses (every block of a host device) are reused at once by anyone, as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/runtime/stream.h"

namespace kiln::runtime {

/// Where a device's memory comes from. allocate() returns null when the memory is exhausted.
class MemoryResource {
 public:
  virtual ~MemoryResource() = default;
  virtual void* allocate(int64_t bytes) = 0;
  virtual void deallocate(void* pointer, int64_t bytes) = 0;
};

struct AllocatorStats {
  int64_t allocations = 0;        // requests served
  int64_t cache_hits = 0;         // requests served from the cache
  int64_t bytes_in_use = 0;       // held by live buffers (size classes, not requested bytes)
  int64_t peak_bytes_in_use = 0;
  int64_t bytes_reserved = 0;     // taken from the resource: in use + cached
  int64_t peak_bytes_reserved = 0;
};

class CachingAllocator {
 public:
  /// Blocks are 256-byte aligned size classes: multiples of 512 bytes up to 1 MiB, of 2 MiB
  /// above (PyTorch's split), so a buffer freed in one step is found again by the next.
  static constexpr int64_t kSmallGranule = 512;
  static constexpr int64_t kLargeThreshold = int64_t{1} << 20;
  static constexpr int64_t kLargeGranule = int64_t{2} << 20;

  /// The requester of blocks that is not a device stream: host code, copies on the transfer
  /// stream (which is not ordered after the compute stream). Device streams number from 1.
  static constexpr int kHostOrder = 0;

  /// `device` names the device in errors; `limit_bytes` caps the bytes reserved.
  CachingAllocator(std::string device, std::unique_ptr<MemoryResource> resource, int64_t limit_bytes);
  ~CachingAllocator();

  /// A block of at least `bytes` (0 allowed); it returns to the cache when the last copy of
  /// the pointer goes, also after the allocator itself is gone. OutOfMemoryError naming the
  /// device, the request, what is in use and the limit when even an emptied cache cannot serve it.
  /// `stream`: who uses the block first (a device stream id, or kHostOrder); it may reuse a
  /// cached block whose uses are still running on that same stream.
  std::shared_ptr<std::byte> allocate(int64_t bytes, int stream = kHostOrder);
  /// Records that work queued on device stream `stream` (>= 1) uses `block` (a pointer
  /// allocate() returned) until `done` completes: once freed, the block goes to other streams
  /// and the host only after `done`. A later use on the same stream replaces the earlier one
  /// (stream order); uses on other streams are kept until their events completed.
  void record_use(const std::shared_ptr<std::byte>& block, int stream, const Event& done);
  /// Gives the cached blocks back to the resource (also blocks whose uses still run: the
  /// resource's deallocate must wait for the device, as cuMemFree does).
  void empty_cache();

  AllocatorStats stats() const;
  int64_t limit_bytes() const { return limit_; }
  static int64_t size_class(int64_t bytes);

 private:
  struct State;
  std::shared_ptr<State> state_;
  int64_t limit_;
};

}  // namespace kiln::runtime
