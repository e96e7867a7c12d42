// tf.io.decode_jpeg / encode_jpeg on libjpeg-turbo's TurboJPEG API, with TensorFlow's
// defaults (the fast integer IDCT, fancy upsampling, a truncated file is an error).
#pragma once

#include <string>

#include "kiln/core/host_tensor.h"

namespace kiln::data {

/// decode_jpeg's keyword arguments, in tf.io.decode_jpeg's order. (TF's try_recover_truncated
/// and acceptable_fraction are not offered: a truncated file is always a DataError.)
struct DecodeJpegOptions {
  /// 0: the file's (1 for a greyscale JPEG, else 3; CMYK converts to RGB as TF does),
  /// 1: luma only, 3: RGB.
  int channels = 0;
  /// Downscale while decoding by 1, 2, 4 or 8 (libjpeg's DCT scaling): ceil(size / ratio).
  int ratio = 1;
  /// Interpolate subsampled chroma (libjpeg's fancy upsampling); false replicates it.
  bool fancy_upscaling = true;
  /// "" or "INTEGER_FAST": libjpeg's fast integer IDCT (TF's default); "INTEGER_ACCURATE":
  /// the accurate integer IDCT (JDCT_ISLOW). TurboJPEG offers no float IDCT.
  std::string dct_method = "";
};

/// Decodes a JPEG (a u8[n] tensor: read_file's, or a TFRecord feature) into u8[height, width,
/// channels]. Throws DataError naming the file (contents_source) and the problem for a
/// damaged, truncated or oversized file (see image_limits.h), ValueError for bad options.
HostTensor decode_jpeg(const HostTensor& contents, const DecodeJpegOptions& options = {});

/// encode_jpeg's keyword arguments, in tf.io.encode_jpeg's order. (TF's optimize_size,
/// density and XMP fields are not offered; TurboJPEG writes a JFIF header with a 1:1 aspect.)
struct EncodeJpegOptions {
  /// "" (from the channels: 1 grey, 3 RGB), "grayscale" or "rgb" (then the image must have
  /// 1 or 3 channels to match).
  std::string format = "";
  /// 0-100.
  int quality = 95;
  /// Write a progressive JPEG.
  bool progressive = false;
  /// Subsample chroma 2x2 (4:2:0); false keeps full-resolution chroma (4:4:4).
  bool chroma_downsampling = true;
};

/// Encodes a u8[height, width, 1 or 3] image as a JPEG, returned as u8[n] (libjpeg's accurate
/// integer DCT, as TF). Throws ShapeError/DTypeError/ValueError for images or options a JPEG
/// cannot take.
HostTensor encode_jpeg(const HostTensor& image, const EncodeJpegOptions& options = {});

}  // namespace kiln::data
