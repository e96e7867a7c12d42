// Keras's deterministic image preprocessing layers: Resizing and CenterCrop, on
// channels_last images (height, width, channels) per example, in the compute dtype. Resizing
// is tf.image.resize (data::resize_weights) as two traced matmuls, so it runs inside the
// compiled step and in predict alike.
#pragma once

#include "kiln/keras/layers/layer.h"
#include "kiln/keras/layers/layer_options.h"

namespace kiln::keras {

/// Resizing's keyword arguments after height and width, in Keras 3's order.
struct ResizingOptions {
  /// tf.image.resize's method: "bilinear", "nearest", "bicubic", "area", "lanczos3",
  /// "lanczos5", "gaussian" or "mitchellcubic".
  std::string interpolation = "bilinear";
  /// Crop the largest centred window of the target's aspect ratio first (smart_resize).
  bool crop_to_aspect_ratio = false;
  /// Pad to the target's aspect ratio first (centred, with fill_value); Keras 3 only.
  bool pad_to_aspect_ratio = false;
  std::string fill_mode = "constant";  // the padding's mode; Keras takes only "constant"
  double fill_value = 0.0;
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: height, width. Resizes each image to height x width, without antialiasing (as Keras).
class Resizing : public Layer {
 public:
  Resizing(int64_t height, int64_t width, ResizingOptions options = {});
  static Resizing from_config(const std::string& config_json);
  std::string class_name() const override { return "Resizing"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t height_, width_;
  ResizingOptions options_;
};

/// Args: height, width. The centred height x width window (the border int((side - target) /
/// 2) cut from the top and left); an image smaller than the target on a side is instead
/// cropped to the target's aspect ratio and resized (bilinear), as Keras does.
class CenterCrop : public Layer {
 public:
  CenterCrop(int64_t height, int64_t width, LayerOptions options = {});
  static CenterCrop from_config(const std::string& config_json);
  std::string class_name() const override { return "CenterCrop"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t height_, width_;
};

namespace internal {
/// The images [batch, h, w, c] resized to height x width with tf.image.resize's `method`
/// (no antialias), in x's dtype; shared by Resizing, CenterCrop and RandomCrop.
Tensor resize_images(const Tensor& x, int64_t height, int64_t width, const std::string& method);
/// Keras's smart_resize: the centred window of the target's aspect ratio, resized bilinearly.
Tensor smart_resize(const Tensor& x, int64_t height, int64_t width);
}  // namespace internal

}  // namespace kiln::keras
