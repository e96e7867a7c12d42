// StagingRing: the page-locked host buffers host<->device copies pass through (a DMA engine
// reads and writes only pinned memory), used round robin. A slot is handed out again only once
// the copy that last used it has finished on the device, so the copy of batch N+1 never
// overwrites host memory the device is still reading for batch N, while up to `slots` copies
// are in flight at once (the transfer stream fills one slot while the DMA engine drains
// another). The device side is an Event per use, so the reuse rules run (and are tested) on
// the CPU; the cuda device supplies pinned memory and its copies' events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/runtime/caching_allocator.h"
#include "kiln/runtime/stream.h"

namespace kiln::runtime {

class StagingRing {
 public:
  struct Slot {
    int index = -1;
    std::byte* data = nullptr;
    int64_t bytes = 0;  // the slot's capacity, at least what acquire() asked for
  };
  struct Stats {
    int64_t acquires = 0;
    int64_t waits = 0;           // acquires that found their slot's last copy still running
    int64_t grows = 0;           // slots (re)allocated larger
    int64_t bytes_reserved = 0;  // over every slot
  };

  /// `slots` buffers (at least one) from `memory` (pinned host memory on a GPU), each grown on
  /// demand to the largest copy it has served.
  StagingRing(std::unique_ptr<MemoryResource> memory, int slots);
  /// Waits for every copy still using a slot, then frees the slots.
  ~StagingRing();
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;

  /// The next slot in ring order, with room for `bytes`: blocks until the copy that last used
  /// it has finished (its event completed or failed), then grows it when it is too small. Not
  /// thread-safe: one thread (the transfer stream's) acquires and releases. InternalError when
  /// the slot is still held (acquired and not released).
  Slot acquire(int64_t bytes);
  /// The device uses `slot` until `done` completes (a default Event: not at all, the host
  /// already waited). `keep_alive` (the copy's device memory) is held as long, so a buffer
  /// dropped before its copy finished is not handed to other work while the DMA still writes it.
  void release(const Slot& slot, Event done, std::shared_ptr<const void> keep_alive = {});

  int num_slots() const { return static_cast<int>(slots_.size()); }
  const Stats& stats() const { return stats_; }

 private:
  struct Entry {
    std::byte* data = nullptr;
    int64_t bytes = 0;
    bool held = false;
    Event in_use;                          // the last copy through this slot
    std::shared_ptr<const void> keep_alive;  // what that copy writes, until it finished
  };
  static void wait_quietly(const Event& e);

  std::unique_ptr<MemoryResource> memory_;
  std::vector<Entry> slots_;
  size_t next_ = 0;
  Stats stats_;
};

}  // namespace kiln::runtime
