// tf.image's crops, pads and flips on host tensors ([height, width, channels] or [batch,
// height, width, channels], any dtype), and their stateless random forms.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/core/host_tensor.h"
#include "kiln/data/image/resize.h"
#include "kiln/data/image/stateless_seed.h"

namespace kiln::data {

/// The window [offset_height, offset_height + target_height) x [offset_width, ...). Throws
/// ValueError when the window leaves the image or is empty.
HostTensor crop_to_bounding_box(const HostTensor& image, int64_t offset_height, int64_t offset_width,
                                int64_t target_height, int64_t target_width);
/// The image placed at (offset_height, offset_width) in a zero image of the target size.
/// Throws ValueError when it does not fit.
HostTensor pad_to_bounding_box(const HostTensor& image, int64_t offset_height, int64_t offset_width,
                               int64_t target_height, int64_t target_width);
/// The central `central_fraction` (in (0, 1]) of each side, as TF: the border
/// int((side - side * fraction) / 2) is cut from both ends.
HostTensor central_crop(const HostTensor& image, double central_fraction);
/// A window of an image: rows [top, top + height), columns [left, left + width).
struct CropWindow {
  int64_t top = 0, left = 0, height = 0, width = 0;
};
/// Keras's smart_resize window (crop_to_aspect_ratio): the largest centred window of a
/// height x width image with the target's aspect ratio, sides truncated, at least 1x1.
CropWindow aspect_ratio_crop_window(int64_t height, int64_t width, int64_t target_height, int64_t target_width);

/// Resizes to fit inside the target keeping the aspect ratio (side / max(ratio_h, ratio_w),
/// floored), then pads with zeros, centred (TF's resize_with_pad). The result is f32
/// (the input's dtype for "nearest"), like resize's.
HostTensor resize_with_pad(const HostTensor& image, int64_t target_height, int64_t target_width,
                           const ResizeOptions& options = {});

/// Mirrors each image left to right (the width axis).
HostTensor flip_left_right(const HostTensor& image);
/// Mirrors each image top to bottom (the height axis).
HostTensor flip_up_down(const HostTensor& image);
/// Flips image b of the batch left to right when draw b of `seed` is below 0.5
/// (tf.image.stateless_random_flip_left_right).
HostTensor random_flip_left_right(const HostTensor& image, const StatelessSeed& seed);
/// The same, top to bottom.
HostTensor random_flip_up_down(const HostTensor& image, const StatelessSeed& seed);
/// A [crop_height, crop_width] window at an offset drawn uniformly from `seed`, the same for
/// every image of a batch (tf.image.stateless_random_crop of the spatial axes).
HostTensor random_crop(const HostTensor& image, int64_t crop_height, int64_t crop_width, const StatelessSeed& seed);

}  // namespace kiln::data
