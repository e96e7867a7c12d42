#include "kiln/runtime/staging_ring.h"

#include <algorithm>

#include "kiln/core/check.h"

namespace kiln::runtime {

StagingRing::StagingRing(std::unique_ptr<MemoryResource> memory, int slots)
    : memory_(std::move(memory)), slots_(static_cast<size_t>(std::max(slots, 1))) {}

StagingRing::~StagingRing() {
  for (Entry& e : slots_) {
    wait_quietly(e.in_use);
    if (e.data != nullptr) memory_->deallocate(e.data, e.bytes);
  }
}

// A failed copy no longer uses its slot; its error reaches whoever waits on the copy's buffer.
void StagingRing::wait_quietly(const Event& e) {
  try {
    e.wait();
  } catch (...) {
  }
}

StagingRing::Slot StagingRing::acquire(int64_t bytes) {
  const size_t i = next_;
  Entry& e = slots_[i];
  KILN_CHECK(!e.held, "staging slot ", i, " acquired again before it was released");
  ++stats_.acquires;
  if (!e.in_use.ready()) ++stats_.waits;
  wait_quietly(e.in_use);
  e.in_use = Event();
  e.keep_alive.reset();
  if (e.bytes < bytes) {
    if (e.data != nullptr) memory_->deallocate(e.data, e.bytes);
    stats_.bytes_reserved -= e.bytes;
    e.data = nullptr;
    e.bytes = 0;
    void* p = memory_->allocate(bytes);
    if (p == nullptr)
      KILN_THROW(OutOfMemoryError, "[staging] cannot allocate ", bytes, " bytes of pinned host memory for a copy.");
    e.data = static_cast<std::byte*>(p);
    e.bytes = bytes;
    stats_.bytes_reserved += bytes;
    ++stats_.grows;
  }
  e.held = true;
  next_ = (next_ + 1) % slots_.size();
  return {static_cast<int>(i), e.data, e.bytes};
}

void StagingRing::release(const Slot& slot, Event done, std::shared_ptr<const void> keep_alive) {
  KILN_CHECK(slot.index >= 0 && slot.index < num_slots() && slots_[static_cast<size_t>(slot.index)].held,
             "released staging slot ", slot.index, " is not held");
  Entry& e = slots_[static_cast<size_t>(slot.index)];
  e.held = false;
  e.in_use = std::move(done);
  e.keep_alive = std::move(keep_alive);
}

}  // namespace kiln::runtime
