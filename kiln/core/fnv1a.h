// FNV-1a, 64-bit: a stable hash of bytes (std::hash may differ between builds), for names
// derived from content such as kernel cache files and generated symbols.
#pragma once

#include <cstdint>
#include <string_view>

namespace kiln {

inline constexpr uint64_t kFnv1a64Offset = 1469598103934665603ull;

/// Continues hash `h` over `bytes`; fnv1a64(b, fnv1a64(a)) hashes a then b.
inline uint64_t fnv1a64(std::string_view bytes, uint64_t h = kFnv1a64Offset) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace kiln
