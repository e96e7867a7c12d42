// tf.io.decode_png / encode_png on libspng. Every colour type and bit depth decodes with
// TensorFlow's channel rules: palette expanded to RGB (RGBA with a tRNS chunk), 1/2/4-bit grey
// scaled to 8 bits, tRNS to alpha when alpha is asked for, 16-bit samples kept or cut to
// their high byte.
#pragma once

#include "kiln/core/dtype.h"
#include "kiln/core/host_tensor.h"

namespace kiln::data {

/// decode_png's keyword arguments, in tf.io.decode_png's order.
struct DecodePngOptions {
  /// 0: the file's own (grey 1, grey+alpha 2, RGB 3, RGBA 4; palette 3, or 4 with tRNS);
  /// 1-4 convert: RGB to grey as TF (libpng's 0.299/0.587/0.114 weights in fixed point),
  /// grey to RGB by copying, alpha added opaque or dropped.
  int channels = 0;
  /// DType::kU8 (16-bit files keep their high byte, as TF) or DType::kI32 for tf.uint16:
  /// Kiln has no u16 dtype, so the 16-bit samples come as i32 in [0, 65535] (8-bit samples
  /// scaled by 257, as TF).
  DType dtype = DType::kU8;
};

/// Decodes a PNG (a u8[n] tensor: read_file's, or a TFRecord feature) into
/// [height, width, channels]. Throws DataError naming the file (contents_source) and the
/// problem for a damaged, truncated or oversized file (see image_limits.h), ValueError for
/// bad options.
HostTensor decode_png(const HostTensor& contents, const DecodePngOptions& options = {});

/// encode_png's keyword arguments, in tf.io.encode_png's order.
struct EncodePngOptions {
  /// zlib level 0-9; -1 is zlib's default (6).
  int compression = -1;
};

/// Encodes [height, width, channels] (channels 1-4) as a PNG, returned as u8[n]: u8 images as
/// 8-bit, i32 images (values in [0, 65535], decode_png's tf.uint16 stand-in) as 16-bit.
/// Throws ShapeError/DTypeError/ValueError for images PNG cannot hold.
HostTensor encode_png(const HostTensor& image, const EncodePngOptions& options = {});

}  // namespace kiln::data
