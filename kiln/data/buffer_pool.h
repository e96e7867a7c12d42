// BufferPool: recycles the storage of large, short-lived tensors (batch outputs), so a steady
// pipeline stops paying for allocation, page faults and heap trimming on every batch.
//
// Lifetime: the pool lives in a shared_ptr, and every buffer it hands out carries a deleter
// holding that shared_ptr. A buffer returns to the pool only when the last tensor sharing it is
// destroyed (a consumer may keep a batch, or a slice of it, as long as it likes), so a buffer
// still referenced is never handed out again. The pool outlives its iterator until the last
// buffer is back, then frees everything. Buffers may be released on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "kiln/core/host_tensor.h"

namespace kiln::data {

/// A thread-safe free list of 64-byte aligned buffers; see the file comment for lifetimes.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  /// Keeps up to `max_free` idle buffers; more returned buffers are freed.
  static std::shared_ptr<BufferPool> create(int max_free);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  /// A tensor of `shape` with unspecified contents (HostTensor::uninitialized semantics) whose
  /// storage comes back here once no tensor references it.
  HostTensor acquire(Shape shape);

  /// Buffers idle in the pool now (for tests and stats).
  int free_count() const;
  /// Buffers allocated so far (reuses not counted).
  int64_t allocations() const;

 private:
  struct Block {
    std::byte* data;
    size_t bytes;
  };
  explicit BufferPool(int max_free) : max_free_(max_free) {}
  void release(Block block);

  const int max_free_;
  mutable std::mutex mu_;
  std::vector<Block> free_;  // guarded by mu_
  int64_t allocations_ = 0;  // guarded by mu_
};

}  // namespace kiln::data
