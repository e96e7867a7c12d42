// Bulk conversions between 16-bit storage (bf16, f16) and f32 for the oneDNN adapters' widened
// paths (CPUs without 16-bit matmul, convolution or pooling kernels: f32 compute from 16-bit
// storage). Vectorized and split over the run's OpenMP team when large; the same bits as
// core/half.h's scalar conversions (round to nearest even, NaN kept and quieted).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "kiln/core/dtype.h"

namespace kiln::cpu {

/// dst[r * dst_ld + c] = f32(src[r * src_ld + c]) for r < rows, c < cols; `t` is bf16 or f16
/// (strides in elements).
void widen_rows(const void* src, DType t, int64_t rows, int64_t cols, int64_t src_ld, float* dst, int64_t dst_ld);

/// dst[r * dst_ld + c] = `t`(src[r * src_ld + c]), rounded to nearest even.
void narrow_rows(const float* src, int64_t rows, int64_t cols, int64_t src_ld, DType t, void* dst, int64_t dst_ld);

/// dst[r * dst_ld + c] = f32(`t`(src[r * src_ld + c])): f32 values rounded to `t`'s precision
/// and kept in f32, what widening them after a convert to `t` would give, in one pass.
void round_rows(const float* src, DType t, int64_t rows, int64_t cols, int64_t src_ld, float* dst, int64_t dst_ld);

/// `n` contiguous values.
inline void widen(const void* src, DType t, int64_t n, float* dst) { widen_rows(src, t, 1, n, n, dst, n); }
inline void narrow(const float* src, int64_t n, DType t, void* dst) { narrow_rows(src, 1, n, n, t, dst, n); }

/// The f32 copies of one executable's widened kernels, shared: its steps run one at a time, so
/// one buffer as large as the largest kernel's need serves them all (per kernel, the copies of
/// a model's matmuls and convolutions would add up to tens of MiB). Kernels reserve their size
/// when they are made, so a run never allocates.
class WidenScratch {
 public:
  /// Makes the shared buffer hold at least `floats`.
  void reserve(int64_t floats);

  /// At least `floats` floats for the length of one kernel run: the shared buffer or, while
  /// another thread holds it (one executable run from two threads at once), a buffer of its own.
  class Lease {
   public:
    Lease(WidenScratch& scratch, int64_t floats);
    float* data() { return data_; }

   private:
    std::unique_lock<std::mutex> lock_;
    std::vector<float> own_;
    float* data_ = nullptr;
  };

 private:
  std::mutex mutex_;
  std::vector<float> buffer_;
};

}  // namespace kiln::cpu
