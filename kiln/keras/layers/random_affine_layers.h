// Keras's random geometric layers: RandomRotation, RandomZoom and RandomTranslation. In
// training each draws a transform per image and samples the input through it as TF's
// ImageProjectiveTransformV3 does (kiln::projective_transform: bilinear or nearest, fill_mode
// reflect, wrap, constant or nearest); in inference each is the identity. The transforms are
// tf.keras 2's (rotation about the centre, zoom about the centre, shift by a fraction of the
// side).
#pragma once

#include "kiln/keras/layers/random_image_layer.h"

namespace kiln::keras {

/// The keyword arguments the three share, in Keras's order after the factors.
struct RandomAffineOptions {
  std::string fill_mode = "reflect";      // "reflect", "wrap", "constant" or "nearest"
  std::string interpolation = "bilinear";  // or "nearest"
  std::optional<uint64_t> seed = std::nullopt;
  double fill_value = 0.0;  // read outside the image with fill_mode "constant"
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// The base: draws each image's transform, then samples.
class RandomAffineLayer : public RandomImageLayer {
 public:
  const RandomAffineOptions& affine_options() const { return options_; }

 protected:
  RandomAffineLayer(const char* cls, RandomAffineOptions options);
  /// Each image's [a0, a1, a2, b0, b1, b2, c0, c1] (f32 [batch, 8]) for images of x's shape.
  virtual Tensor transforms(const Tensor& key, const Tensor& x) const = 0;
  Tensor call(const Tensor& x, bool training) override;
  /// The shared config fields (fill_mode, fill_value, interpolation, seed).
  void put_affine_config(std::string& config_json) const;

 private:
  RandomAffineOptions options_;
};

/// Args: factor, a fraction of a full turn (f: [-f, f]; a pair (lower, upper)). Positive
/// angles turn counter-clockwise.
class RandomRotation : public RandomAffineLayer {
 public:
  explicit RandomRotation(Factor factor, RandomAffineOptions options = {});
  static RandomRotation from_config(const std::string& config_json);
  std::string class_name() const override { return "RandomRotation"; }
  std::string get_config() const override;

 protected:
  Tensor transforms(const Tensor& key, const Tensor& x) const override;

 private:
  double lower_, upper_;
};

/// Args: height_factor (f: [-f, f]; a pair), width_factor (none: the height's draw, keeping
/// the aspect ratio). Each side is scaled by 1 + the draw about the centre: positive zooms out.
class RandomZoom : public RandomAffineLayer {
 public:
  explicit RandomZoom(Factor height_factor, std::optional<Factor> width_factor = std::nullopt,
                      RandomAffineOptions options = {});
  static RandomZoom from_config(const std::string& config_json);
  std::string class_name() const override { return "RandomZoom"; }
  std::string get_config() const override;

 protected:
  Tensor transforms(const Tensor& key, const Tensor& x) const override;

 private:
  double height_lower_, height_upper_;
  std::optional<std::pair<double, double>> width_;
};

/// Args: height_factor, width_factor (fractions of the side; f: [-f, f]; a pair). Each image
/// moves by the draws times its height and width.
class RandomTranslation : public RandomAffineLayer {
 public:
  RandomTranslation(Factor height_factor, Factor width_factor, RandomAffineOptions options = {});
  static RandomTranslation from_config(const std::string& config_json);
  std::string class_name() const override { return "RandomTranslation"; }
  std::string get_config() const override;

 protected:
  Tensor transforms(const Tensor& key, const Tensor& x) const override;

 private:
  double height_lower_, height_upper_, width_lower_, width_upper_;
};

}  // namespace kiln::keras
