// tf.io.decode_image: detects JPEG or PNG by its first bytes and decodes it with the matching
// codec (TF's defaults for each), optionally scaling to another dtype.
#pragma once

#include "kiln/core/dtype.h"
#include "kiln/core/host_tensor.h"
#include "kiln/data/image/jpeg_codec.h"
#include "kiln/data/image/png_codec.h"

namespace kiln::data {

/// decode_image's keyword arguments, in tf.io.decode_image's order (expand_animations has no
/// use without GIF, which Kiln does not decode).
struct DecodeImageOptions {
  /// 0: the file's; 1, 3 or 4 convert as decode_png/decode_jpeg do (a JPEG has no 4).
  int channels = 0;
  /// DType::kU8; DType::kI32 for tf.uint16 (PNG's 16-bit samples; 8-bit samples scaled as TF:
  /// PNG x * 257, JPEG x * 256); DType::kF32 for TF's float, in [0, 1] (x / 65535 for PNG,
  /// which decodes at 16 bits first, x / 255 for JPEG).
  DType dtype = DType::kU8;
};

/// Decodes a JPEG or PNG into [height, width, channels]. Throws DataError naming the file for
/// an unrecognised, unsupported (GIF, BMP) or damaged file, ValueError for bad options.
HostTensor decode_image(const HostTensor& contents, const DecodeImageOptions& options = {});

}  // namespace kiln::data
