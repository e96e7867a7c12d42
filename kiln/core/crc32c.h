// CRC-32C (Castagnoli), as TFRecord files and Kiln's checkpoints use it, plus TFRecord's mask.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln {

/// Extends `crc` (0 to start) over `n` bytes.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);
inline uint32_t crc32c(const void* data, size_t n) { return crc32c_extend(0, data, n); }

/// TFRecord's masked CRC: rotate right by 15 and add 0xa282ead8.
inline uint32_t crc32c_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t crc32c_unmask(uint32_t masked) {
  uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace kiln
