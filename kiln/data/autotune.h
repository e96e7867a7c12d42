// AUTOTUNE: how Kiln picks parallelism, buffer sizes and hand-off sizes when asked to.
//
// - Parallelism (map, interleave): the core count. A map function is CPU-bound, so more
//   threads than cores only add switching; fewer leave cores idle while the consumer waits.
//   Even a cheap map (the seed's u8 -> f32) stays parallel rather than inline: inline costs
//   less CPU per element (no hand-off: ~0.8 against ~1.2 us per MNIST image here) but puts the
//   whole pipeline on the one prefetch thread, so on an idle machine it tops out at one
//   core's rate, while workers take the map off that thread. Pass num_parallel_calls = 0 to
//   keep the map inline when the cores are better spent on the training step.
// - Buffer size (prefetch, parallel map): starts small (2 per thread) and doubles, up to
//   kMaxAutotuneBuffer, each time the consumer finds the buffer empty *after* it had been full
//   since the last growth. A buffer that fills and then drains means a producer that keeps up
//   on average but is bursty, so more slack helps; one that never fills means a producer that
//   is simply too slow, where more buffer would only cost memory (tf.data's prefetch rule).
// - Hand-off size (parallel runners): each worker takes `chunk` elements per lock. The runner
//   measures the time per element (upstream pull + function) and sizes chunks to about
//   kTargetChunkSeconds of work, so the cost of a hand-off (a lock, and often a futex wake-up
//   of the other side: several microseconds on a VM) stays a few percent of the work even for
//   cheap per-element functions, while slow functions still go one by one.
// - Prefetch after a stage with workers of its own (parallel map, map_and_batch): no thread;
//   its buffer (autotuned as above) is added to that stage's, which already runs ahead.
#pragma once

#include <algorithm>
#include <cstdint>

namespace kiln::data {

/// Pass as a parallelism or buffer size to let Kiln choose (tf.data.AUTOTUNE).
inline constexpr int kAutotune = -1;
/// tf.data's own spelling of kAutotune, so `data::AUTOTUNE` in a program written from
/// TensorFlow's documentation compiles. (A macro named AUTOTUNE would break this; none of
/// Kiln's dependencies defines one.)
inline constexpr int AUTOTUNE = kAutotune;  // NOLINT(readability-identifier-naming): TF's name
/// Largest buffer AUTOTUNE grows to, in elements.
inline constexpr int kMaxAutotuneBuffer = 64;
/// Work per worker hand-off that chunking aims for.
inline constexpr double kTargetChunkSeconds = 200e-6;
/// Largest chunk a worker takes at once.
inline constexpr int kMaxChunk = 256;

/// Cores this process may use (std::thread::hardware_concurrency, at least 1).
int available_cores();

/// `requested` if positive, the core count for kAutotune; throws ValueError otherwise.
int resolve_parallelism(int requested, const char* where);

/// Grows an autotuned buffer as the comment at the top of this file explains.
class BufferTuner {
 public:
  BufferTuner(int initial, bool enabled) : size_(std::max(1, initial)), enabled_(enabled) {}

  int size() const { return size_; }
  bool enabled() const { return enabled_; }
  /// Call when the buffer holds `buffered` elements after a producer added one.
  void on_produced(int buffered) {
    if (buffered >= size_) was_full_ = true;
  }
  /// Call when the consumer found the buffer empty; returns true if the size grew.
  bool on_consumer_wait() {
    if (!enabled_ || !was_full_ || size_ >= kMaxAutotuneBuffer) return false;
    size_ = std::min(2 * size_, kMaxAutotuneBuffer);
    was_full_ = false;
    return true;
  }

 private:
  int size_;
  bool enabled_;
  bool was_full_ = false;
};

/// Picks how many elements a worker takes per hand-off from the measured time per element.
class ChunkTuner {
 public:
  explicit ChunkTuner(int max_chunk) : max_chunk_(std::max(1, max_chunk)) {}

  int chunk() const { return chunk_; }
  /// Records that `n` elements took `seconds` (pull plus function) and updates the chunk.
  void record(int n, double seconds);

 private:
  int max_chunk_;
  int chunk_ = 1;
  double per_element_ = -1;  // moving average, seconds; negative until the first record
};

}  // namespace kiln::data
