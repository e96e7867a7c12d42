// IDX files (the MNIST format): big-endian magic 0x0000TTNN (TT type, NN rank), one
// big-endian u32 per dimension, then the elements. Plain or gzip-compressed.
#pragma once

#include <string>

#include "kiln/core/host_tensor.h"

namespace kiln::data {

/// Largest element count read_idx accepts (2^34 bytes of u8): beyond it a header is absurd.
inline constexpr int64_t kMaxIdxElements = int64_t{1} << 34;

/// Reads an IDX file (gzip detected from its first bytes). Element types: u8 (0x08) -> u8,
/// i32 (0x0C) -> i32, f32 (0x0D) -> f32, f64 (0x0E) -> f64. Throws DataError naming the
/// file and the problem for a missing file, wrong magic, absurd dimensions, truncation or
/// trailing bytes; memory is only allocated as data actually arrives.
HostTensor read_idx(const std::string& path);

}  // namespace kiln::data
