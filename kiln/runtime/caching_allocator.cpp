#include "kiln/runtime/caching_allocator.h"

#include <algorithm>

#include "kiln/core/check.h"

namespace kiln::runtime {

// Shared with every block's deleter, so a buffer that outlives its device still frees cleanly.
struct CachingAllocator::State {
  std::string device;
  std::unique_ptr<MemoryResource> resource;
  mutable std::mutex mutex;
  std::multimap<int64_t, void*> cached;  // size class -> free block
  AllocatorStats stats;
  bool closed = false;  // the allocator is gone: blocks go straight back to the resource

  void release(void* p, int64_t size) {
    std::lock_guard lock(mutex);
    stats.bytes_in_use -= size;
    if (closed) {
      resource->deallocate(p, size);
      stats.bytes_reserved -= size;
    } else {
      cached.emplace(size, p);
    }
  }
  void empty_locked() {
    for (auto& [size, p] : cached) {
      resource->deallocate(p, size);
      stats.bytes_reserved -= size;
    }
    cached.clear();
  }
};

CachingAllocator::CachingAllocator(std::string device, std::unique_ptr<MemoryResource> resource, int64_t limit_bytes)
    : state_(std::make_shared<State>()), limit_(limit_bytes) {
  state_->device = std::move(device);
  state_->resource = std::move(resource);
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard lock(state_->mutex);
  state_->closed = true;
  state_->empty_locked();
}

int64_t CachingAllocator::size_class(int64_t bytes) {
  const int64_t granule = bytes > kLargeThreshold ? kLargeGranule : kSmallGranule;
  return std::max<int64_t>(granule, (bytes + granule - 1) / granule * granule);
}

std::shared_ptr<std::byte> CachingAllocator::allocate(int64_t bytes) {
  if (bytes < 0) KILN_THROW(ValueError, "[", state_->device, "] cannot allocate ", bytes, " bytes.");
  const int64_t size = size_class(bytes);
  std::unique_lock lock(state_->mutex);
  AllocatorStats& s = state_->stats;
  void* p = nullptr;
  if (auto it = state_->cached.find(size); it != state_->cached.end()) {
    p = it->second;
    state_->cached.erase(it);
    ++s.cache_hits;
  } else {
    if (s.bytes_reserved + size > limit_) state_->empty_locked();
    if (s.bytes_reserved + size <= limit_) p = state_->resource->allocate(size);
    if (p == nullptr) {
      state_->empty_locked();
      p = s.bytes_reserved + size <= limit_ ? state_->resource->allocate(size) : nullptr;
    }
    if (p == nullptr)
      KILN_THROW(OutOfMemoryError, "[", state_->device, "] cannot allocate ", bytes, " bytes: ", s.bytes_in_use,
                 " bytes are in use of ", limit_, ". Hint: free buffers you hold (models, datasets prefetched to the "
                 "device), or use a smaller batch.");
    s.bytes_reserved += size;
    s.peak_bytes_reserved = std::max(s.peak_bytes_reserved, s.bytes_reserved);
  }
  ++s.allocations;
  s.bytes_in_use += size;
  s.peak_bytes_in_use = std::max(s.peak_bytes_in_use, s.bytes_in_use);
  lock.unlock();
  std::shared_ptr<State> state = state_;
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [state, size](std::byte* q) { state->release(q, size); });
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(state_->mutex);
  state_->empty_locked();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

}  // namespace kiln::runtime
