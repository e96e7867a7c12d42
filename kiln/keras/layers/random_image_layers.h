// Keras's random image layers that move or scale whole pixels: RandomFlip, RandomCrop,
// RandomContrast and RandomBrightness. In training each draws per image (RandomCrop: one window
// per batch, as Keras); in inference each is the identity (RandomCrop: the centre window,
// resized as Keras's smart_resize does). Outputs are in the compute dtype.
#pragma once

#include <array>

#include "kiln/keras/layers/random_image_layer.h"

namespace kiln::keras {

struct RandomFlipOptions {
  std::string mode = "horizontal_and_vertical";  // "horizontal", "vertical" or both
  std::optional<uint64_t> seed = std::nullopt;   // unseeded: derived from the layer name
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Flips each image left-right and/or up-down with probability 1/2 each (two independent
/// draws for "horizontal_and_vertical", as tf.keras 2; Keras 3 uses one draw for both).
class RandomFlip : public RandomImageLayer {
 public:
  explicit RandomFlip(RandomFlipOptions options = {});
  static RandomFlip from_config(const std::string& config_json);
  std::string class_name() const override { return "RandomFlip"; }
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  RandomFlipOptions options_;
};

struct RandomCropOptions {
  std::optional<uint64_t> seed = std::nullopt;
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: height, width. Training: a height x width window at an offset drawn per batch (when
/// the images are larger on both sides); otherwise, and in inference, the centre window of
/// the target's aspect ratio resized (bilinear) to height x width.
class RandomCrop : public RandomImageLayer {
 public:
  RandomCrop(int64_t height, int64_t width, RandomCropOptions options = {});
  static RandomCrop from_config(const std::string& config_json);
  std::string class_name() const override { return "RandomCrop"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t height_, width_;
  RandomCropOptions options_;
};

struct RandomContrastOptions {
  std::array<double, 2> value_range = {0, 255};  // the output is clipped to it
  std::optional<uint64_t> seed = std::nullopt;
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: factor (f: [1 - f, 1 + f]; (lower, upper): [1 - lower, 1 + upper]). Training: each
/// image's channels become (x - mean) * c + mean with c drawn per image, clipped to
/// value_range.
class RandomContrast : public RandomImageLayer {
 public:
  explicit RandomContrast(Factor factor, RandomContrastOptions options = {});
  static RandomContrast from_config(const std::string& config_json);
  std::string class_name() const override { return "RandomContrast"; }
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  double lower_, upper_;
  RandomContrastOptions options_;
};

struct RandomBrightnessOptions {
  std::array<double, 2> value_range = {0, 255};
  std::optional<uint64_t> seed = std::nullopt;
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: factor in [-1, 1] (f: [-f, f]; a pair: sorted). Training: adds d * (high - low) to
/// each image, d drawn per image from the factor's range, clipped to value_range.
class RandomBrightness : public RandomImageLayer {
 public:
  explicit RandomBrightness(Factor factor, RandomBrightnessOptions options = {});
  static RandomBrightness from_config(const std::string& config_json);
  std::string class_name() const override { return "RandomBrightness"; }
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  double lower_, upper_;
  RandomBrightnessOptions options_;
};

}  // namespace kiln::keras
