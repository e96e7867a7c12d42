// Conv2D: y = activation(conv2d(x, kernel) + bias) over NHWC images (keras.layers.Conv2D).
// The conv + bias + activation chain compiles to one oneDNN convolution with post-ops.
#pragma once

#include "kiln/keras/activations.h"
#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

/// Keras Conv2D keyword arguments with their defaults.
struct Conv2DLayerOptions {
  Dims strides = {1, 1};
  std::string padding = "valid";  // "valid" or "same" (TensorFlow's rule)
  std::string data_format = "channels_last";  // or "channels_first" (NCHW, transposed to NHWC inside)
  Dims dilation_rate = {1, 1};
  int64_t groups = 1;  // input channels and filters are split into this many groups
  ActivationArg activation = "";  // a Keras name ("" = linear) or a C++ callable
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  std::optional<Regularizer> kernel_regularizer = std::nullopt;  // a penalty training adds to the loss
  std::optional<Regularizer> bias_regularizer = std::nullopt;
  /// A penalty on the layer's output, divided by the batch size (Layer::set_activity_regularizer).
  std::optional<Regularizer> activity_regularizer = std::nullopt;
  std::optional<Constraint> kernel_constraint = std::nullopt;  // applied after each optimizer step
  std::optional<Constraint> bias_constraint = std::nullopt;
  Dims input_shape = {};  // Keras input_shape= (first layer of a Sequential)
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: filters (output channels), kernel_size (height, width) or one int for both.
/// Input shape: (batch, height, width, channels) (channels_first: (batch, channels, height,
/// width), and the output likewise). Output shape: (batch, out_h, out_w, filters)
/// with out = ceil(in / stride) for "same", floor((in - (k - 1) * dilation - 1) / stride) + 1
/// for "valid". Kernel: (kh, kw, channels / groups, filters); bias: (filters).
class Conv2D : public Layer {
 public:
  Conv2D(int64_t filters, Dims kernel_size, Conv2DLayerOptions options = {});
  Conv2D(int64_t filters, int64_t kernel_size, Conv2DLayerOptions options = {})
      : Conv2D(filters, Dims{kernel_size, kernel_size}, std::move(options)) {}
  static Conv2D from_config(const std::string& config_json);

  std::string class_name() const override { return "Conv2D"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;
  int64_t filters() const { return filters_; }
  const Dims& kernel_size() const { return kernel_size_; }
  const Variable& kernel() const { return self_as<Conv2D>().kernel_; }
  const Variable& bias() const { return self_as<Conv2D>().bias_; }

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  /// The layer's name, or "Conv2D" before it has one (constructor errors).
  std::string where() const { return name().empty() ? "Conv2D" : name(); }

  int64_t filters_;
  Dims kernel_size_;
  Conv2DLayerOptions options_;
  Variable kernel_, bias_;
};

}  // namespace kiln::keras
