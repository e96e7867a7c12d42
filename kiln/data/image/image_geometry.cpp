// Crops, pads and flips: byte copies of pixel runs, so every dtype goes through unchanged.
#include "kiln/data/image/image_geometry.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kiln/core/check.h"
#include "kiln/data/image/image_layout_impl.h"

namespace kiln::data {

using image_detail::ImageLayout;
using image_detail::image_layout;

HostTensor crop_to_bounding_box(const HostTensor& image, int64_t offset_height, int64_t offset_width,
                                int64_t target_height, int64_t target_width) {
  const ImageLayout in = image_layout("crop_to_bounding_box", image);
  if (offset_height < 0 || offset_width < 0 || target_height < 1 || target_width < 1 ||
      offset_height + target_height > in.height || offset_width + target_width > in.width)
    KILN_THROW(ValueError, "[crop_to_bounding_box] the window offset_height=", offset_height, ", offset_width=",
               offset_width, ", target_height=", target_height, ", target_width=", target_width,
               " must lie inside the ", in.height, "x", in.width, " image ", image.shape(), ".");
  HostTensor out = HostTensor::uninitialized(Shape(image.dtype(), in.dims_with(target_height, target_width)));
  const size_t run = static_cast<size_t>(target_width) * in.pixel_bytes;
  auto* dst = static_cast<std::byte*>(out.raw_data());
  for (int64_t b = 0; b < in.batch; ++b)
    for (int64_t y = 0; y < target_height; ++y, dst += run)
      std::memcpy(dst, in.pixel(image, b, offset_height + y, offset_width), run);
  return out;
}

HostTensor pad_to_bounding_box(const HostTensor& image, int64_t offset_height, int64_t offset_width,
                               int64_t target_height, int64_t target_width) {
  const ImageLayout in = image_layout("pad_to_bounding_box", image);
  if (offset_height < 0 || offset_width < 0 || offset_height + in.height > target_height ||
      offset_width + in.width > target_width)
    KILN_THROW(ValueError, "[pad_to_bounding_box] the ", in.height, "x", in.width, " image ", image.shape(),
               " at offset_height=", offset_height, ", offset_width=", offset_width, " does not fit in target_height=",
               target_height, ", target_width=", target_width, ".");
  HostTensor out = HostTensor::zeros(Shape(image.dtype(), in.dims_with(target_height, target_width)));
  const ImageLayout o = image_layout("pad_to_bounding_box", out);
  const size_t run = static_cast<size_t>(in.width) * in.pixel_bytes;
  for (int64_t b = 0; b < in.batch; ++b)
    for (int64_t y = 0; y < in.height; ++y)
      std::memcpy(o.pixel(out, b, offset_height + y, offset_width), in.pixel(image, b, y, 0), run);
  return out;
}

HostTensor central_crop(const HostTensor& image, double central_fraction) {
  const ImageLayout in = image_layout("central_crop", image);
  if (!(central_fraction > 0.0 && central_fraction <= 1.0))
    KILN_THROW(ValueError, "[central_crop] central_fraction must be in (0, 1], received central_fraction=",
               central_fraction, ".");
  if (central_fraction == 1.0) return image;
  // TF: int((side - side * fraction) / 2) from each end (Python's int() truncates).
  const auto start_h = static_cast<int64_t>((static_cast<double>(in.height) - in.height * central_fraction) / 2);
  const auto start_w = static_cast<int64_t>((static_cast<double>(in.width) - in.width * central_fraction) / 2);
  return crop_to_bounding_box(image, start_h, start_w, in.height - 2 * start_h, in.width - 2 * start_w);
}

CropWindow aspect_ratio_crop_window(int64_t height, int64_t width, int64_t target_height, int64_t target_width) {
  if (height < 1 || width < 1 || target_height < 1 || target_width < 1)
    KILN_THROW(ValueError, "[aspect_ratio_crop_window] sizes must be at least 1, received a ", height, "x", width,
               " image and a ", target_height, "x", target_width, " target.");
  // Keras's int(float(...)) truncations, in double as Python computes them.
  const int64_t crop_h = std::max<int64_t>(
      1, std::min(height, static_cast<int64_t>(static_cast<double>(width * target_height) / target_width)));
  const int64_t crop_w = std::max<int64_t>(
      1, std::min(width, static_cast<int64_t>(static_cast<double>(height * target_width) / target_height)));
  return {static_cast<int64_t>(static_cast<double>(height - crop_h) / 2),
          static_cast<int64_t>(static_cast<double>(width - crop_w) / 2), crop_h, crop_w};
}

HostTensor resize_with_pad(const HostTensor& image, int64_t target_height, int64_t target_width,
                           const ResizeOptions& options) {
  const ImageLayout in = image_layout("resize_with_pad", image);
  if (target_height < 1 || target_width < 1)
    KILN_THROW(ValueError, "[resize_with_pad] the target must be at least 1x1, received target_height=",
               target_height, ", target_width=", target_width, ".");
  // TF's arithmetic, in f32: the larger ratio fits the image; the padding is floored.
  const auto fh = static_cast<float>(in.height), fw = static_cast<float>(in.width);
  const auto th = static_cast<float>(target_height), tw = static_cast<float>(target_width);
  const float ratio = std::max(fw / tw, fh / th);
  const float rh = fh / ratio, rw = fw / ratio;
  const int64_t resized_h = std::max<int64_t>(1, static_cast<int64_t>(std::floor(rh)));
  const int64_t resized_w = std::max<int64_t>(1, static_cast<int64_t>(std::floor(rw)));
  const int64_t pad_h = std::max<int64_t>(0, static_cast<int64_t>((th - rh) / 2));
  const int64_t pad_w = std::max<int64_t>(0, static_cast<int64_t>((tw - rw) / 2));
  ResizeOptions fit = options;
  fit.preserve_aspect_ratio = false;
  return pad_to_bounding_box(resize(image, resized_h, resized_w, fit), pad_h, pad_w, target_height, target_width);
}

namespace {

HostTensor flip(const HostTensor& image, bool left_right, const StatelessSeed* seed, const char* op) {
  const ImageLayout in = image_layout(op, image);
  HostTensor out = HostTensor::uninitialized(image.shape());
  const ImageLayout o = image_layout(op, out);
  for (int64_t b = 0; b < in.batch; ++b) {
    const bool flip_this = seed == nullptr || stateless_uniform(*seed, static_cast<uint64_t>(b)) < 0.5f;
    for (int64_t y = 0; y < in.height; ++y) {
      const int64_t sy = flip_this && !left_right ? in.height - 1 - y : y;
      if (!flip_this || !left_right) {
        std::memcpy(o.pixel(out, b, y, 0), in.pixel(image, b, sy, 0), static_cast<size_t>(in.width) * in.pixel_bytes);
        continue;
      }
      for (int64_t x = 0; x < in.width; ++x)
        std::memcpy(o.pixel(out, b, y, x), in.pixel(image, b, sy, in.width - 1 - x), in.pixel_bytes);
    }
  }
  return out;
}

}  // namespace

HostTensor flip_left_right(const HostTensor& image) { return flip(image, true, nullptr, "flip_left_right"); }
HostTensor flip_up_down(const HostTensor& image) { return flip(image, false, nullptr, "flip_up_down"); }
HostTensor random_flip_left_right(const HostTensor& image, const StatelessSeed& seed) {
  return flip(image, true, &seed, "random_flip_left_right");
}
HostTensor random_flip_up_down(const HostTensor& image, const StatelessSeed& seed) {
  return flip(image, false, &seed, "random_flip_up_down");
}

HostTensor random_crop(const HostTensor& image, int64_t crop_height, int64_t crop_width, const StatelessSeed& seed) {
  const ImageLayout in = image_layout("random_crop", image);
  if (crop_height < 1 || crop_width < 1 || crop_height > in.height || crop_width > in.width)
    KILN_THROW(ValueError, "[random_crop] the crop crop_height=", crop_height, ", crop_width=", crop_width,
               " must be at least 1x1 and fit in the ", in.height, "x", in.width, " image ", image.shape(), ".");
  // Offsets uniform in [0, side - crop] (draws 0 and 1 of the seed's stream).
  auto offset = [&](int64_t slack, uint64_t draw) {
    return std::min(slack, static_cast<int64_t>(stateless_uniform(seed, draw) * static_cast<float>(slack + 1)));
  };
  return crop_to_bounding_box(image, offset(in.height - crop_height, 0), offset(in.width - crop_width, 1), crop_height,
                              crop_width);
}

}  // namespace kiln::data
