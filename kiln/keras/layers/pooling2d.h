// MaxPooling2D and AveragePooling2D over NHWC images (keras.layers), sharing one base as in
// Keras (Pooling2D): the two differ only in the window reduction, so they live together.
#pragma once

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

/// Keras pooling keyword arguments with their defaults.
struct Pooling2DOptions {
  Dims pool_size = {2, 2};
  Dims strides = {};  // empty = pool_size (Keras strides=None)
  std::string padding = "valid";  // "valid" or "same"
  std::string data_format = "channels_last";  // or "channels_first" (NCHW, transposed to NHWC inside)
  Dims input_shape = {};
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Input shape: (batch, height, width, channels). Output shape: (batch, out_h, out_w, channels)
/// with out = ceil(in / stride) for "same", floor((in - pool) / stride) + 1 for "valid".
/// "same" windows at the border average only the real pixels (TensorFlow's rule).
class Pooling2D : public Layer {
 public:
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;
  const Dims& pool_size() const { return options_.pool_size; }
  const Dims& strides() const { return options_.strides; }

 protected:
  Pooling2D(const char* class_name, bool is_max, Pooling2DOptions options);
  /// The options and `trainable` from a Keras config (`where` names the caller in errors).
  static Pooling2DOptions options_from_config(const std::string& config_json, const char* where,
                                              bool* trainable);
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::string where() const;

  bool is_max_;
  Pooling2DOptions options_;  // strides resolved (never empty)
};

/// A window size as Keras takes it positionally: one int for both dims (2) or two ({2, 2}).
/// (A class, not Dims: GCC 12 would find `{.pool_size = ...}` ambiguous against a vector.)
struct WindowSize {
  WindowSize(int64_t both) : dims{both, both} {}  // NOLINT: implicit on purpose
  WindowSize(int64_t rows, int64_t cols) : dims{rows, cols} {}
  Dims dims;
};

/// `options` with the pool size given positionally.
inline Pooling2DOptions with_pool_size(WindowSize pool_size, Pooling2DOptions options) {
  options.pool_size = std::move(pool_size.dims);
  return options;
}

/// The maximum of each window.
class MaxPooling2D : public Pooling2D {
 public:
  explicit MaxPooling2D(Pooling2DOptions options = {}) : Pooling2D("MaxPooling2D", true, std::move(options)) {}
  /// Keras's positional pool_size: MaxPooling2D({2, 2}), MaxPooling2D(2) (a square window).
  explicit MaxPooling2D(WindowSize pool_size, Pooling2DOptions options = {})
      : MaxPooling2D(with_pool_size(std::move(pool_size), std::move(options))) {}
  static MaxPooling2D from_config(const std::string& config_json);
  std::string class_name() const override { return "MaxPooling2D"; }
};

/// The mean of each window.
class AveragePooling2D : public Pooling2D {
 public:
  explicit AveragePooling2D(Pooling2DOptions options = {})
      : Pooling2D("AveragePooling2D", false, std::move(options)) {}
  /// Keras's positional pool_size, as MaxPooling2D's.
  explicit AveragePooling2D(WindowSize pool_size, Pooling2DOptions options = {})
      : AveragePooling2D(with_pool_size(std::move(pool_size), std::move(options))) {}
  static AveragePooling2D from_config(const std::string& config_json);
  std::string class_name() const override { return "AveragePooling2D"; }
};

}  // namespace kiln::keras
