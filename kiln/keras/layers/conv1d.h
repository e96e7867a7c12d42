// Conv1D: y = activation(conv1d(x, kernel) + bias) over (batch, steps, channels) sequences
// (keras.layers.Conv1D), run as Conv2D's op over a size-1 width axis.
#pragma once

#include "kiln/keras/activations.h"
#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

/// Keras Conv1D keyword arguments with their defaults.
struct Conv1DOptions {
  int64_t strides = 1;
  /// "valid", "same" or "causal" (all padding on the left, so step t sees only steps <= t).
  std::string padding = "valid";
  std::string data_format = "channels_last";  // or "channels_first": (batch, channels, steps)
  int64_t dilation_rate = 1;
  int64_t groups = 1;  // input channels and filters are split into this many groups
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

/// Args: filters, kernel_size. Input shape: (batch, steps, channels). Output shape: (batch,
/// out_steps, filters) with out = ceil(steps / stride) for "same" and "causal",
/// floor((steps - (k - 1) * dilation - 1) / stride) + 1 for "valid". Kernel: (k, channels /
/// groups, filters); bias: (filters).
class Conv1D : public Layer {
 public:
  Conv1D(int64_t filters, int64_t kernel_size, Conv1DOptions options = {});
  static Conv1D from_config(const std::string& config_json);
  std::string class_name() const override { return "Conv1D"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;
  const Variable& kernel() const { return self_as<Conv1D>().kernel_; }
  const Variable& bias() const { return self_as<Conv1D>().bias_; }

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::string where() const { return name().empty() ? "Conv1D" : name(); }

  int64_t filters_, kernel_size_;
  Conv1DOptions options_;
  Variable kernel_, bias_;
};

}  // namespace kiln::keras
