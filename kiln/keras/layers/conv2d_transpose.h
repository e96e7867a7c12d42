// Conv2DTranspose: y = activation(conv2d_transpose(x, kernel) + bias) over NHWC images
// (keras.layers.Conv2DTranspose), the gradient of a convolution with respect to its input.
#pragma once

#include "kiln/keras/activations.h"
#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

/// Keras Conv2DTranspose keyword arguments with their defaults.
struct Conv2DTransposeOptions {
  Dims strides = {1, 1};
  std::string padding = "valid";  // "valid" or "same"
  /// Extra rows/cols at the bottom/right of the output, each < its stride; none = Keras's
  /// output_padding=None (the smallest output the convolution rule allows).
  std::optional<Dims> output_padding = std::nullopt;
  std::string data_format = "channels_last";  // or "channels_first"
  Dims dilation_rate = {1, 1};
  ActivationArg activation = "";  // a Keras name ("" = linear) or a C++ callable
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  std::optional<Regularizer> kernel_regularizer = std::nullopt;
  std::optional<Regularizer> bias_regularizer = std::nullopt;
  /// A penalty on the layer's output, divided by the batch size (Layer::set_activity_regularizer).
  std::optional<Regularizer> activity_regularizer = std::nullopt;
  std::optional<Constraint> kernel_constraint = std::nullopt;
  std::optional<Constraint> bias_constraint = std::nullopt;
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: filters (output channels), kernel_size (height, width) or one int. Input shape:
/// (batch, rows, cols, channels). Output shape: (batch, out_rows, out_cols, filters) with
/// Keras's deconv_output_length: without output_padding, rows * stride for "same" and
/// rows * stride + max(k_eff - stride, 0) for "valid"; with it, (rows - 1) * stride + k_eff -
/// 2 * pad + output_padding, pad = k_eff // 2 for "same", 0 for "valid" (k_eff = (k - 1) *
/// dilation + 1). Kernel: (kh, kw, filters, channels); bias: (filters).
class Conv2DTranspose : public Layer {
 public:
  Conv2DTranspose(int64_t filters, Dims kernel_size, Conv2DTransposeOptions options = {});
  Conv2DTranspose(int64_t filters, int64_t kernel_size, Conv2DTransposeOptions options = {})
      : Conv2DTranspose(filters, Dims{kernel_size, kernel_size}, std::move(options)) {}
  static Conv2DTranspose from_config(const std::string& config_json);
  std::string class_name() const override { return "Conv2DTranspose"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;
  const Variable& kernel() const { return self_as<Conv2DTranspose>().kernel_; }
  const Variable& bias() const { return self_as<Conv2DTranspose>().bias_; }

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::string where() const { return name().empty() ? "Conv2DTranspose" : name(); }

  int64_t filters_;
  Dims kernel_size_;
  Conv2DTransposeOptions options_;
  Variable kernel_, bias_;
};

}  // namespace kiln::keras
