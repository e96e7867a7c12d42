// What every codec needs from its input tensor: the bytes, and a name for them in errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kiln/core/host_tensor.h"

namespace kiln::data::image_detail {

/// The encoded bytes of a u8[n] contents tensor, and where they came from (contents_source).
struct EncodedImage {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::string where;
};

/// Checks `contents` is a non-empty u8[n] string tensor (DTypeError / DataError naming `op`).
EncodedImage encoded_image(std::string_view op, const HostTensor& contents);

/// Throws DataError unless width, height >= 1, width * height <= kMaxImagePixels and
/// `file_can_hold` (the file's size can hold that many pixels: `bound_reason` says why not;
/// see image_limits.h). Decoders call it before allocating.
void check_image_size(std::string_view op, const EncodedImage& in, int64_t width, int64_t height,
                      bool file_can_hold, std::string_view bound_reason);

/// An image tensor's [height, width, channels].
struct ImageDims {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
};
/// Checks an image to encode has rank 3 and at least one pixel (ShapeError naming `op`).
ImageDims image_dims(std::string_view op, const HostTensor& image);

}  // namespace kiln::data::image_detail
