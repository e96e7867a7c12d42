// The size limits every image decoder applies before it allocates, so a damaged or hostile
// header cannot make Kiln allocate without bound.
#pragma once

#include <cstdint>

namespace kiln::data {

/// The most pixels (height * width) a decoder accepts: TensorFlow's limit (2^29, e.g.
/// 23170 x 23170), so every image TF decodes, Kiln decodes. Larger headers are a DataError.
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 29;

/// Deflate expands at most 1032:1, so a PNG's image data cannot hold more than this many
/// filtered bytes per byte of file; a header promising more is a DataError before any
/// allocation.
inline constexpr int64_t kMaxPngExpansion = 1032;

/// Each JPEG scan codes at least one bit per 8x8 block of a component, and a block covers
/// at most 32x32 pixels (sampling factors up to 4): so at most 8192 pixels per byte of file.
/// A header promising more is a DataError before any allocation (arithmetic-coded files of a
/// near-constant image could compress further; those are refused with that message).
inline constexpr int64_t kMaxJpegPixelsPerByte = 8192;

}  // namespace kiln::data
