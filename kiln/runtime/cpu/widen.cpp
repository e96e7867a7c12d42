#include "kiln/runtime/cpu/widen.h"

#include <algorithm>
#include <cstring>

#include "kiln/core/half.h"

namespace kiln::cpu {
namespace {

// Below this many values one thread converts (a team costs more than it saves); above it, the
// work is cut into pieces of a row of at most kPiece values.
constexpr int64_t kParallelValues = int64_t{1} << 16;
constexpr int64_t kPiece = 8192;

// Branch-free (the NaN test is a select), so GCC vectorizes the loops below; the same bits as
// half.h's f32_to_bf16_bits.
inline uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet = (u >> 16) | 0x0040u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}

void widen_piece(const uint16_t* s, DType t, int64_t n, float* d) {
  if (t == DType::kBF16) {
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t u = static_cast<uint32_t>(s[i]) << 16;  // exact
      std::memcpy(&d[i], &u, 4);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = f16_bits_to_f32(s[i]);
  }
}

void narrow_piece(const float* s, int64_t n, DType t, uint16_t* d) {
  if (t == DType::kBF16) {
    for (int64_t i = 0; i < n; ++i) d[i] = bf16_bits(s[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16_bits(s[i]);
  }
}

void round_piece(const float* s, DType t, int64_t n, float* d) {
  if (t == DType::kBF16) {
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t u = static_cast<uint32_t>(bf16_bits(s[i])) << 16;
      std::memcpy(&d[i], &u, 4);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = f16_bits_to_f32(f32_to_f16_bits(s[i]));
  }
}

// Calls piece(r, c0, c1) over every row r and column range [c0, c1), on the team when large.
template <typename Piece>
void for_pieces(int64_t rows, int64_t cols, Piece piece) {
  if (rows <= 0 || cols <= 0) return;
  if (rows * cols <= kParallelValues) {  // no team at all: even a team of one costs a libgomp call
    for (int64_t r = 0; r < rows; ++r) piece(r, 0, cols);
    return;
  }
  const int64_t per_row = (cols + kPiece - 1) / kPiece;
  const int64_t count = rows * per_row;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < count; ++p) {
    const int64_t r = p / per_row, c0 = (p % per_row) * kPiece;
    piece(r, c0, std::min(cols, c0 + kPiece));
  }
}

}  // namespace

void widen_rows(const void* src, DType t, int64_t rows, int64_t cols, int64_t src_ld, float* dst, int64_t dst_ld) {
  const auto* s = static_cast<const uint16_t*>(src);
  for_pieces(rows, cols, [&](int64_t r, int64_t c0, int64_t c1) {
    widen_piece(s + r * src_ld + c0, t, c1 - c0, dst + r * dst_ld + c0);
  });
}

void narrow_rows(const float* src, int64_t rows, int64_t cols, int64_t src_ld, DType t, void* dst, int64_t dst_ld) {
  auto* d = static_cast<uint16_t*>(dst);
  for_pieces(rows, cols, [&](int64_t r, int64_t c0, int64_t c1) {
    narrow_piece(src + r * src_ld + c0, c1 - c0, t, d + r * dst_ld + c0);
  });
}

void round_rows(const float* src, DType t, int64_t rows, int64_t cols, int64_t src_ld, float* dst, int64_t dst_ld) {
  for_pieces(rows, cols, [&](int64_t r, int64_t c0, int64_t c1) {
    round_piece(src + r * src_ld + c0, t, c1 - c0, dst + r * dst_ld + c0);
  });
}

void WidenScratch::reserve(int64_t floats) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (static_cast<int64_t>(buffer_.size()) < floats) buffer_.resize(static_cast<size_t>(floats));
}

WidenScratch::Lease::Lease(WidenScratch& scratch, int64_t floats) : lock_(scratch.mutex_, std::try_to_lock) {
  if (lock_.owns_lock() && static_cast<int64_t>(scratch.buffer_.size()) >= floats) {
    data_ = scratch.buffer_.data();
    return;
  }
  own_.resize(static_cast<size_t>(floats));
  data_ = own_.data();
}

}  // namespace kiln::cpu
