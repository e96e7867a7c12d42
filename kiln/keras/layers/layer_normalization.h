// LayerNormalization: normalizes each example over one axis to zero mean and unit variance,
// then scales by gamma and shifts by beta (keras.layers.LayerNormalization).
#pragma once

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct LayerNormalizationOptions {
  int axis = -1;  // counted with the batch dim, as in Keras
  double epsilon = 1e-3;
  bool center = true;  // beta
  bool scale = true;   // gamma
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  Dims input_shape = {};
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Input: (batch, ...). Output: the same shape. Weights gamma and beta of shape (dim of axis).
/// `options` with the axis given positionally.
inline LayerNormalizationOptions with_axis(int axis, LayerNormalizationOptions options) {
  options.axis = axis;
  return options;
}

class LayerNormalization : public Layer {
 public:
  explicit LayerNormalization(LayerNormalizationOptions options = {});
  /// Keras's positional axis: LayerNormalization(-1).
  explicit LayerNormalization(int axis, LayerNormalizationOptions options = {})
      : LayerNormalization(with_axis(axis, std::move(options))) {}
  static LayerNormalization from_config(const std::string& config_json);
  std::string class_name() const override { return "LayerNormalization"; }
  bool supports_masking() const override { return true; }  // per-step, as in Keras
  std::string get_config() const override;
  const Variable& gamma() const { return self_as<LayerNormalization>().gamma_; }
  const Variable& beta() const { return self_as<LayerNormalization>().beta_; }

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  LayerNormalizationOptions options_;
  Variable gamma_, beta_;
};

/// (x - mean) / sqrt(var + epsilon) * gamma + beta over `axis` of x (biased variance, as
/// Keras); gamma and beta have shape (x.dim(axis)) and may be undefined (no scale / center).
Tensor layer_normalization(const Tensor& x, const Tensor& gamma, const Tensor& beta, int axis, double epsilon);

}  // namespace kiln::keras
