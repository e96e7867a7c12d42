// BufferPool: exact-size reuse of released buffers, with a bounded free list.
#include "kiln/data/buffer_pool.h"

#include <cstdlib>

#include "kiln/core/check.h"

namespace kiln::data {

std::shared_ptr<BufferPool> BufferPool::create(int max_free) {
  KILN_CHECK(max_free >= 0, "BufferPool max_free=", max_free);
  return std::shared_ptr<BufferPool>(new BufferPool(max_free));
}

BufferPool::~BufferPool() {
  for (const Block& b : free_) std::free(b.data);
}

HostTensor BufferPool::acquire(Shape shape) {
  // aligned_alloc needs a non-zero multiple of the alignment.
  size_t bytes = (static_cast<size_t>(shape.byte_size()) + kHostAlignment - 1) / kHostAlignment *
                 kHostAlignment;
  if (bytes == 0) bytes = kHostAlignment;
  Block block{nullptr, bytes};
  {
    std::lock_guard lock(mu_);
    for (size_t i = free_.size(); i-- > 0;) {
      if (free_[i].bytes != bytes) continue;
      block = free_[i];
      free_[i] = free_.back();
      free_.pop_back();
      break;
    }
    if (block.data == nullptr) ++allocations_;
  }
  if (block.data == nullptr) {
    block.data = static_cast<std::byte*>(std::aligned_alloc(kHostAlignment, bytes));
    if (block.data == nullptr)
      KILN_THROW(OutOfMemoryError, "[BufferPool] cannot allocate ", bytes, " bytes for ", shape,
                 ". Hint: reduce the batch size.");
  }
  std::shared_ptr<std::byte> storage(
      block.data, [pool = shared_from_this(), bytes](std::byte* p) { pool->release({p, bytes}); });
  return HostTensor::from_storage(std::move(shape), std::move(storage));
}

void BufferPool::release(Block block) {
  {
    std::lock_guard lock(mu_);
    if (static_cast<int>(free_.size()) < max_free_) {
      free_.push_back(block);
      return;
    }
    // Full: a buffer of a size no longer asked for makes room for this one.
    for (Block& b : free_) {
      if (b.bytes == block.bytes) continue;
      std::swap(b, block);
      break;
    }
  }
  std::free(block.data);
}

int BufferPool::free_count() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(free_.size());
}

int64_t BufferPool::allocations() const {
  std::lock_guard lock(mu_);
  return allocations_;
}

}  // namespace kiln::data
