// BatchNormalization (keras.layers.BatchNormalization): normalizes over every axis but
// `axis` with the batch statistics in training, updating moving_mean/moving_variance by
// assignment inside the compiled step, and with those moving statistics in inference.
#pragma once

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

/// Keras BatchNormalization keyword arguments with their defaults.
struct BatchNormalizationOptions {
  int axis = -1;  // the feature axis, counted with the batch dim (-1 = last)
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;  // add beta
  bool scale = true;   // multiply by gamma
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  Initializer moving_mean_initializer = "zeros";
  Initializer moving_variance_initializer = "ones";
  Dims input_shape = {};
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// y = (x - mean) / sqrt(var + epsilon) * gamma + beta, per feature along `axis`.
/// Training: mean/var are the batch's (biased) moments, and each call sets
///   moving = moving - (moving - batch) * (1 - momentum).
/// As in tf.keras 2.x, whose fused kernel serves 4-D inputs with axis 1 or 3, the batch
/// variance fed to the moving average of such inputs carries Bessel's correction n / (n - 1);
/// other ranks feed the biased variance. Inference (and a layer with trainable = false, as in
/// Keras 2) uses the moving statistics. Weights, in Keras order: gamma, beta (trainable),
/// moving_mean, moving_variance (non-trainable), each of shape (features).
/// `options` with the axis given positionally.
inline BatchNormalizationOptions with_axis(int axis, BatchNormalizationOptions options) {
  options.axis = axis;
  return options;
}

class BatchNormalization : public Layer {
 public:
  explicit BatchNormalization(BatchNormalizationOptions options = {});
  /// Keras's positional axis: BatchNormalization(-1).
  explicit BatchNormalization(int axis, BatchNormalizationOptions options = {})
      : BatchNormalization(with_axis(axis, std::move(options))) {}
  static BatchNormalization from_config(const std::string& config_json);
  std::string class_name() const override { return "BatchNormalization"; }
  std::string get_config() const override;
  const Variable& gamma() const { return self_as<BatchNormalization>().gamma_; }
  const Variable& beta() const { return self_as<BatchNormalization>().beta_; }
  const Variable& moving_mean() const { return self_as<BatchNormalization>().moving_mean_; }
  const Variable& moving_variance() const { return self_as<BatchNormalization>().moving_variance_; }
  double momentum() const { return self_as<BatchNormalization>().options_.momentum; }
  /// Keras's `layer.momentum = m` (a builder such as MobileNetV2 fixes 0.999); takes effect at
  /// the next compile. ValueError outside [0, 1].
  void set_momentum(double momentum);

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::string where() const { return name().empty() ? class_name() : name(); }
  /// The axis counted from 0 with the batch dim, for inputs of `rank`; ValueError otherwise.
  int resolve_axis(int rank) const;

  BatchNormalizationOptions options_;
  bool axis_was_list_ = false;  // the config gave [axis] (Keras after build): keep that form
  Variable gamma_, beta_, moving_mean_, moving_variance_;
};

}  // namespace kiln::keras
