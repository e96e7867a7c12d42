// How the tf.image ops see a tensor: [height, width, channels] or [batch, height, width,
// channels], addressed by pixel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kiln/core/check.h"
#include "kiln/core/host_tensor.h"

namespace kiln::data::image_detail {

struct ImageLayout {
  bool batched = false;
  int64_t batch = 1, height = 0, width = 0, channels = 0;
  size_t pixel_bytes = 0;

  /// The dims of an image like this one with another height and width.
  Dims dims_with(int64_t h, int64_t w) const {
    return batched ? Dims{batch, h, w, channels} : Dims{h, w, channels};
  }
  /// Start of pixel (y, x) of image b of `t` (laid out like this).
  const std::byte* pixel(const HostTensor& t, int64_t b, int64_t y, int64_t x) const {
    return static_cast<const std::byte*>(t.raw_data()) + static_cast<size_t>((b * height + y) * width + x) * pixel_bytes;
  }
  std::byte* pixel(HostTensor& t, int64_t b, int64_t y, int64_t x) const {
    return static_cast<std::byte*>(t.raw_data()) + static_cast<size_t>((b * height + y) * width + x) * pixel_bytes;
  }
};

/// Throws ShapeError naming `op` unless `image` is rank 3 or 4 with at least one pixel.
inline ImageLayout image_layout(std::string_view op, const HostTensor& image) {
  const int rank = image.rank();
  if ((rank != 3 && rank != 4) || image.num_elements() == 0)
    KILN_THROW(ShapeError, "[", op, "] expected a non-empty image [height, width, channels] or batch [batch, height, "
               "width, channels], received ", image.shape(), ".");
  const Dims& d = image.dims();
  ImageLayout l{rank == 4, rank == 4 ? d[0] : 1, d[rank - 3], d[rank - 2], d[rank - 1], 0};
  l.pixel_bytes = static_cast<size_t>(l.channels) * size_of(image.dtype());
  return l;
}

}  // namespace kiln::data::image_detail
