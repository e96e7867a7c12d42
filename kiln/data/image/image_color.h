// tf.image's dtype conversion and colour adjustments on host tensors ([height, width,
// channels] or [batch, height, width, channels]), and their stateless random forms. Integer
// images are adjusted in f32 on [0, 1] and converted back (saturating), as TF does.
#pragma once

#include "kiln/core/dtype.h"
#include "kiln/core/host_tensor.h"
#include "kiln/data/image/stateless_seed.h"

namespace kiln::data {

/// tf.image.convert_image_dtype: integers map [0, max] onto floats [0, 1] (x * (1 / max)),
/// floats back by x * (max + 0.5) truncated, integers to integers by TF's shifts (e.g. u8 ->
/// i32: x * 2^23 + ...: (max_out + 1) / (max_in + 1)), floats to floats by a cast. Float to
/// integer always saturates (TF's unsaturated result is undefined for values outside [0, 1]).
HostTensor convert_image_dtype(const HostTensor& image, DType dtype);

/// Adds `delta` to every channel (in [0, 1] units for integer images).
HostTensor adjust_brightness(const HostTensor& image, float delta);
/// (x - mean) * contrast_factor + mean, the mean taken per image and channel.
HostTensor adjust_contrast(const HostTensor& image, float contrast_factor);
/// Scales the HSV saturation of RGB images by saturation_factor (clamped to [0, 1]).
HostTensor adjust_saturation(const HostTensor& image, float saturation_factor);
/// Rotates the HSV hue of RGB images by `delta` (in [-1, 1], fractions of a turn).
HostTensor adjust_hue(const HostTensor& image, float delta);
/// (x - mean) / max(stddev, 1 / sqrt(pixels * channels)) per image, as f32.
HostTensor per_image_standardization(const HostTensor& image);
/// 0.2989 R + 0.5870 G + 0.1140 B, in the input's dtype, one channel.
HostTensor rgb_to_grayscale(const HostTensor& image);
/// The one channel repeated three times.
HostTensor grayscale_to_rgb(const HostTensor& image);

/// adjust_brightness by a delta uniform in [-max_delta, max_delta), drawn from `seed`.
HostTensor random_brightness(const HostTensor& image, float max_delta, const StatelessSeed& seed);
/// adjust_contrast by a factor uniform in [lower, upper), drawn from `seed`.
HostTensor random_contrast(const HostTensor& image, float lower, float upper, const StatelessSeed& seed);
/// adjust_saturation by a factor uniform in [lower, upper), drawn from `seed`.
HostTensor random_saturation(const HostTensor& image, float lower, float upper, const StatelessSeed& seed);
/// adjust_hue by a delta uniform in [-max_delta, max_delta) (max_delta <= 0.5), from `seed`.
HostTensor random_hue(const HostTensor& image, float max_delta, const StatelessSeed& seed);

}  // namespace kiln::data
