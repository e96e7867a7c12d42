#include "kiln/runtime/caching_allocator.h"

#include <algorithm>
#include <unordered_map>

#include "kiln/core/check.h"

namespace kiln::runtime {

// Shared with every block's deleter, so a buffer that outlives its device still frees cleanly.
struct CachingAllocator::State {
  struct Use {
    int stream;
    Event done;
  };
  using Uses = std::vector<Use>;  // at most one per stream, usually none or one
  struct Free {
    void* p;
    Uses uses;
  };
  std::string device;
  std::unique_ptr<MemoryResource> resource;
  mutable std::mutex mutex;
  std::multimap<int64_t, Free> cached;       // size class -> free block
  std::unordered_map<void*, Uses> live_uses;  // live blocks that have uses
  AllocatorStats stats;
  bool closed = false;  // the allocator is gone: blocks go straight back to the resource

  // Whether work of `stream` may use a block with `uses` now: a use on the same stream is
  // ordered before it, one on another stream must have completed (a non-blocking query).
  static bool free_for(const Uses& uses, int stream) {
    return std::all_of(uses.begin(), uses.end(),
                       [stream](const Use& u) { return (u.stream == stream && stream != kHostOrder) || u.done.ready(); });
  }

  void release(void* p, int64_t size) {
    std::lock_guard lock(mutex);
    stats.bytes_in_use -= size;
    Uses uses;
    if (auto it = live_uses.find(p); it != live_uses.end()) {
      uses = std::move(it->second);
      live_uses.erase(it);
    }
    if (closed) {
      resource->deallocate(p, size);
      stats.bytes_reserved -= size;
    } else {
      cached.emplace(size, Free{p, std::move(uses)});
    }
  }
  void empty_locked() {
    for (auto& [size, block] : cached) {
      resource->deallocate(block.p, size);
      stats.bytes_reserved -= size;
    }
    cached.clear();
  }
  // A cached block of `size` that `stream` may use now, taken out of the cache; null if none.
  void* take_locked(int64_t size, int stream) {
    auto [first, last] = cached.equal_range(size);
    for (auto it = first; it != last; ++it) {
      if (!free_for(it->second.uses, stream)) continue;
      void* p = it->second.p;
      // Uses on `stream` itself stay recorded: the host or another stream must still wait for them.
      Uses pending;
      for (Use& u : it->second.uses)
        if (!u.done.ready()) pending.push_back(std::move(u));
      if (!pending.empty()) live_uses[p] = std::move(pending);
      cached.erase(it);
      return p;
    }
    return nullptr;
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

std::shared_ptr<std::byte> CachingAllocator::allocate(int64_t bytes, int stream) {
  if (bytes < 0) KILN_THROW(ValueError, "[", state_->device, "] cannot allocate ", bytes, " bytes.");
  const int64_t size = size_class(bytes);
  std::unique_lock lock(state_->mutex);
  AllocatorStats& s = state_->stats;
  void* p = state_->take_locked(size, stream);
  if (p != nullptr) {
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

void CachingAllocator::record_use(const std::shared_ptr<std::byte>& block, int stream, const Event& done) {
  KILN_CHECK(block != nullptr && stream != kHostOrder, "record_use needs a block and a device stream");
  std::lock_guard lock(state_->mutex);
  State::Uses& uses = state_->live_uses[block.get()];
  std::erase_if(uses, [stream](const State::Use& u) { return u.stream == stream || u.done.ready(); });
  uses.push_back({stream, done});
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
