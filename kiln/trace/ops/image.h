// tf.image on traced tensors, composed from the IR's ops: what a compiled map function or a
// Keras preprocessing layer runs on [height, width, channels] images or [batch, height, width,
// channels] batches of a floating dtype. The host versions (kiln/data/image/) also take
// integer images and convert as TF does; these compute in the images' dtype.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/trace/tensor.h"

namespace kiln {

/// Mirrors each image left to right (the width axis) / top to bottom (the height axis).
Tensor flip_left_right(const Tensor& images);
Tensor flip_up_down(const Tensor& images);
/// The window [offset_height, offset_height + target_height) x [offset_width, ...) of every
/// image. ValueError when the window leaves the image or is empty.
Tensor crop_to_bounding_box(const Tensor& images, int64_t offset_height, int64_t offset_width, int64_t target_height,
                            int64_t target_width);
/// images + delta; delta broadcasts (a scalar, or one per image as [batch, 1, 1, 1]).
Tensor adjust_brightness(const Tensor& images, const Tensor& delta);
/// (x - mean) * contrast_factor + mean, the mean taken per image and channel; the factor
/// broadcasts like adjust_brightness's delta.
Tensor adjust_contrast(const Tensor& images, const Tensor& contrast_factor);
/// (x - mean) / max(stddev, 1 / sqrt(height * width * channels)) per image.
Tensor per_image_standardization(const Tensor& images);
/// 0.2989 R + 0.5870 G + 0.1140 B as one channel; the channel repeated three times.
Tensor rgb_to_grayscale(const Tensor& images);
Tensor grayscale_to_rgb(const Tensor& images);

/// A separable resize: out[b, i, j, c] = sum over (y, x) of height_weights[i, y] * images[b, y,
/// x, c] * width_weights[j, x], as two matmuls. data::resize_weights gives the weights of
/// tf.image.resize's methods, so this is tf.image.resize inside a compiled step.
Tensor resize_separable(const Tensor& images, const Tensor& height_weights, const Tensor& width_weights);

/// How projective_transform samples and what it reads outside the image, in
/// tf.raw_ops.ImageProjectiveTransformV3's argument order.
struct ProjectiveTransformOptions {
  /// "bilinear" or "nearest".
  std::string interpolation = "bilinear";
  /// "reflect" (d c b a | a b c d | d c b a), "wrap", "constant" (fill_value) or "nearest".
  std::string fill_mode = "reflect";
  double fill_value = 0.0;
};

/// TF's ImageProjectiveTransformV3 on [batch, height, width, channels] floating images:
/// output pixel (x, y) of image b reads the input at ((a0 x + a1 y + a2) / k, (b0 x + b1 y +
/// b2) / k), k = c0 x + c1 y + 1, from transforms[b] = [a0, a1, a2, b0, b1, b2, c0, c1]
/// (f32 [batch, 8] or [1, 8] for all). Coordinates are mapped by fill_mode and sampled as TF
/// does (bilinear: the four neighbours, a neighbour outside the image reads fill_value).
/// Differences: k == 0 (a point at infinity, fill_value in TF) is not special-cased: Keras's
/// rotation, zoom and translation matrices have c0 = c1 = 0.
Tensor projective_transform(const Tensor& images, const Tensor& transforms,
                            const ProjectiveTransformOptions& options = {});

}  // namespace kiln
