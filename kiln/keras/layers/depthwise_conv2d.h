// DepthwiseConv2D (one kernel per input channel, depth_multiplier outputs each) and
// SeparableConv2D (depthwise, then a 1x1 convolution mixing the channels) over NHWC images
// (keras.layers). Both run the convolution op with feature groups = input channels.
#pragma once

#include "kiln/keras/activations.h"
#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

/// Keras DepthwiseConv2D keyword arguments with their defaults.
struct DepthwiseConv2DOptions {
  Dims strides = {1, 1};
  std::string padding = "valid";  // "valid" or "same"
  int64_t depth_multiplier = 1;  // output channels per input channel
  std::string data_format = "channels_last";  // or "channels_first"
  Dims dilation_rate = {1, 1};
  ActivationArg activation = "";  // a Keras name ("" = linear) or a C++ callable
  bool use_bias = true;
  Initializer depthwise_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  std::optional<Regularizer> depthwise_regularizer = std::nullopt;
  std::optional<Regularizer> bias_regularizer = std::nullopt;
  std::optional<Constraint> depthwise_constraint = std::nullopt;
  std::optional<Constraint> bias_constraint = std::nullopt;
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: kernel_size (height, width) or one int. Input shape: (batch, rows, cols, channels).
/// Output shape: (batch, out_rows, out_cols, channels * depth_multiplier), output channel
/// c * depth_multiplier + m from input channel c (TensorFlow's order). Weights:
/// depthwise_kernel (kh, kw, channels, depth_multiplier); bias (channels * depth_multiplier).
class DepthwiseConv2D : public Layer {
 public:
  explicit DepthwiseConv2D(Dims kernel_size, DepthwiseConv2DOptions options = {});
  explicit DepthwiseConv2D(int64_t kernel_size, DepthwiseConv2DOptions options = {})
      : DepthwiseConv2D(Dims{kernel_size, kernel_size}, std::move(options)) {}
  static DepthwiseConv2D from_config(const std::string& config_json);
  std::string class_name() const override { return "DepthwiseConv2D"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;
  const Variable& depthwise_kernel() const { return self_as<DepthwiseConv2D>().depthwise_kernel_; }
  const Variable& bias() const { return self_as<DepthwiseConv2D>().bias_; }

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  Dims kernel_size_;
  DepthwiseConv2DOptions options_;
  Variable depthwise_kernel_, bias_;
};

/// Keras SeparableConv2D keyword arguments with their defaults.
struct SeparableConv2DOptions {
  Dims strides = {1, 1};
  std::string padding = "valid";  // "valid" or "same"
  std::string data_format = "channels_last";  // or "channels_first"
  Dims dilation_rate = {1, 1};
  int64_t depth_multiplier = 1;
  ActivationArg activation = "";  // a Keras name ("" = linear) or a C++ callable
  bool use_bias = true;
  Initializer depthwise_initializer = "glorot_uniform";
  Initializer pointwise_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  std::optional<Regularizer> depthwise_regularizer = std::nullopt;
  std::optional<Regularizer> pointwise_regularizer = std::nullopt;
  std::optional<Regularizer> bias_regularizer = std::nullopt;
  std::optional<Constraint> depthwise_constraint = std::nullopt;
  std::optional<Constraint> pointwise_constraint = std::nullopt;
  std::optional<Constraint> bias_constraint = std::nullopt;
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: filters, kernel_size. A DepthwiseConv2D (strides, padding, dilation) followed by a
/// 1x1 convolution to `filters` channels, then bias and activation. Weights: depthwise_kernel
/// (kh, kw, channels, depth_multiplier), pointwise_kernel (1, 1, channels * depth_multiplier,
/// filters), bias (filters).
class SeparableConv2D : public Layer {
 public:
  SeparableConv2D(int64_t filters, Dims kernel_size, SeparableConv2DOptions options = {});
  SeparableConv2D(int64_t filters, int64_t kernel_size, SeparableConv2DOptions options = {})
      : SeparableConv2D(filters, Dims{kernel_size, kernel_size}, std::move(options)) {}
  static SeparableConv2D from_config(const std::string& config_json);
  std::string class_name() const override { return "SeparableConv2D"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;
  const Variable& depthwise_kernel() const { return self_as<SeparableConv2D>().depthwise_kernel_; }
  const Variable& pointwise_kernel() const { return self_as<SeparableConv2D>().pointwise_kernel_; }
  const Variable& bias() const { return self_as<SeparableConv2D>().bias_; }

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t filters_;
  Dims kernel_size_;
  SeparableConv2DOptions options_;
  Variable depthwise_kernel_, pointwise_kernel_, bias_;
};

}  // namespace kiln::keras
