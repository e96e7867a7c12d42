// CRC-32C (Castagnoli), as TFRecord files, TensorBoard event files and Kiln's checkpoints use
// it, plus TFRecord's mask and record framing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kiln {

/// Extends `crc` (0 to start) over `n` bytes. Uses the SSE4.2 crc32 instruction when the CPU
/// running it has one (checked at run time), else crc32c_extend_table.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);
/// The portable table-driven path (what crc32c_extend runs without SSE4.2; tests compare them).
uint32_t crc32c_extend_table(uint32_t crc, const void* data, size_t n);
/// True when crc32c_extend uses the SSE4.2 instruction on this CPU.
bool crc32c_has_hardware();
inline uint32_t crc32c(const void* data, size_t n) { return crc32c_extend(0, data, n); }

/// TFRecord's masked CRC: rotate right by 15 and add 0xa282ead8.
inline uint32_t crc32c_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t crc32c_unmask(uint32_t masked) {
  uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

/// TFRecord's framing of one record (TFRecord files, TensorBoard event files), little-endian:
///   header = u64 length | u32 masked CRC-32C of those 8 bytes;  footer = u32 masked CRC-32C of
///   the data. A record on disk is header, data, footer.
struct TFRecordFrame {
  uint8_t header[12];
  uint8_t footer[4];
};
TFRecordFrame tfrecord_frame(std::string_view record);

}  // namespace kiln
