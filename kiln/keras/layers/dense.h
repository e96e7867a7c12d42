// Dense: y = activation(x @ kernel + bias) on the last axis (Keras keras.layers.Dense).
#pragma once

#include "kiln/keras/activations.h"
#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct DenseOptions {
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

/// Args: units (output size). Input shape: (batch, ..., input_dim).
/// Output shape: (batch, ..., units).
class Dense : public Layer {
 public:
  explicit Dense(int64_t units, DenseOptions options = {});
  static Dense from_config(const std::string& config_json);

  std::string class_name() const override { return "Dense"; }
  bool supports_masking() const override { return true; }  // per-step, as in Keras
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;
  int64_t units() const { return units_; }
  const Variable& kernel() const { return self_as<Dense>().kernel_; }
  const Variable& bias() const { return self_as<Dense>().bias_; }

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t units_;
  DenseOptions options_;
  Variable kernel_, bias_;
};

}  // namespace kiln::keras
