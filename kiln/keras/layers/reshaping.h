// The reshaping layers of Keras's layers/reshaping: ZeroPadding2D, Cropping2D, UpSampling2D,
// Permute and RepeatVector. None has weights; each is one or two shape ops.
#pragma once

#include "kiln/keras/layers/layer.h"
#include "kiln/keras/layers/layer_options.h"
#include "kiln/keras/layers/pooling2d.h"

namespace kiln::keras {

/// Rows and columns at each edge, as Keras takes them: one int for all four, (rows, cols) for
/// both sides, or ((top, bottom), (left, right)).
struct Edges2D {
  Edges2D(int64_t all) : top(all), bottom(all), left(all), right(all) {}  // NOLINT: implicit on purpose
  Edges2D(int64_t rows, int64_t cols) : top(rows), bottom(rows), left(cols), right(cols) {}
  Edges2D(Dims top_bottom, Dims left_right);
  int64_t top, bottom, left, right;
};

/// Input shape: (batch, rows, cols, channels). Output: (batch, top + rows + bottom,
/// left + cols + right, channels), the new cells zero.
class ZeroPadding2D : public Layer {
 public:
  explicit ZeroPadding2D(Edges2D padding = 1, ImageLayerOptions options = {});
  static ZeroPadding2D from_config(const std::string& config_json);
  std::string class_name() const override { return "ZeroPadding2D"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  Edges2D padding_;
  ImageLayerOptions options_;
};

/// Input shape: (batch, rows, cols, channels). Output: (batch, rows - top - bottom,
/// cols - left - right, channels); ShapeError when nothing would remain.
class Cropping2D : public Layer {
 public:
  explicit Cropping2D(Edges2D cropping = 0, ImageLayerOptions options = {});
  static Cropping2D from_config(const std::string& config_json);
  std::string class_name() const override { return "Cropping2D"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  Edges2D cropping_;
  ImageLayerOptions options_;
};

struct UpSampling2DOptions {
  std::string data_format = "channels_last";  // or "channels_first"
  /// "nearest" repeats each pixel; "bilinear" interpolates with half-pixel centers, as
  /// tf.image.resize (Keras 2 and 3) does.
  std::string interpolation = "nearest";
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: size (rows, cols) factors, or one int for both. Input shape: (batch, rows, cols,
/// channels). Output: (batch, rows * size[0], cols * size[1], channels).
class UpSampling2D : public Layer {
 public:
  explicit UpSampling2D(WindowSize size = 2, UpSampling2DOptions options = {});
  static UpSampling2D from_config(const std::string& config_json);
  std::string class_name() const override { return "UpSampling2D"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  Dims size_;
  UpSampling2DOptions options_;
};

/// Args: dims, a permutation of 1..rank (the batch axis 0 stays). Output dim i is input dim
/// dims[i].
class Permute : public Layer {
 public:
  explicit Permute(Dims dims, LayerOptions options = {});
  static Permute from_config(const std::string& config_json);
  std::string class_name() const override { return "Permute"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  Dims dims_;
};

/// Args: n. Input shape: (batch, features). Output: (batch, n, features).
class RepeatVector : public Layer {
 public:
  explicit RepeatVector(int64_t n, LayerOptions options = {});
  static RepeatVector from_config(const std::string& config_json);
  std::string class_name() const override { return "RepeatVector"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t n_;
};

}  // namespace kiln::keras
