// Little-endian integer encoding for Kiln's binary formats (safetensors, checkpoints),
// written byte by byte so the files are the same on every host.
#pragma once

#include <bit>
#include <cstdint>
#include <string>

namespace kiln::io {

// Tensor payloads are copied as raw host bytes; the formats are little-endian.
static_assert(std::endian::native == std::endian::little,
              "kiln/io writes tensor bytes as little-endian; big-endian hosts need byte swaps");

/// Appends the low `bytes` bytes of `v` to `out`, least significant first.
inline void append_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
}

/// Decodes `bytes` little-endian bytes at `p`.
inline uint64_t load_le(const void* p, int bytes) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{b[i]} << (8 * i);
  return v;
}

}  // namespace kiln::io
