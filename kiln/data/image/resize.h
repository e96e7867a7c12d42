// tf.image.resize on host tensors: TensorFlow 2's numerics (half-pixel centers; the antialiased
// and Lanczos/Gaussian/Mitchell methods through TF's scale_and_translate spans), for a host
// map (`ds.map([](HostTensor image) { return resize(image, 224, 224); })`).
#pragma once

#include <cstdint>
#include <string>

#include "kiln/core/host_tensor.h"

namespace kiln::data {

/// resize's keyword arguments, in tf.image.resize's order.
struct ResizeOptions {
  /// "bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian" or
  /// "mitchellcubic" (tf.image.ResizeMethod's values).
  std::string method = "bilinear";
  /// Fit inside (height, width) keeping the aspect ratio: both sides scaled by the smaller
  /// factor, rounded half to even (tf.round).
  bool preserve_aspect_ratio = false;
  /// Low-pass filter when downsampling (bilinear, bicubic and the kernel methods; area always
  /// averages, nearest never does).
  bool antialias = false;
};

/// Resizes [height, width, channels] or [batch, height, width, channels] images to (height,
/// width). The result is f32 (computed in f32 from any real dtype), except "nearest", which
/// keeps the input's dtype and values. Throws ShapeError for another rank or an empty image,
/// ValueError for a size below 1 or an unknown method.
HostTensor resize(const HostTensor& images, int64_t height, int64_t width, const ResizeOptions& options = {});

/// The weights resize gives one axis, as an f32 [out_size, in_size] matrix W: every method is
/// separable and linear, so resize(image) = W_h * image * W_w^T per channel (up to f32
/// rounding: the kernels sum in another order). Made by resizing the identity, so it is
/// resize's own arithmetic (the Resizing layer's traced matmuls use it). "nearest" gives one 1
/// per row. Throws like resize; preserve_aspect_ratio must be false (ValueError).
HostTensor resize_weights(int64_t in_size, int64_t out_size, const ResizeOptions& options = {});

}  // namespace kiln::data
