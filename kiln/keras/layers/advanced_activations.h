// The activation layers of Keras's layers/activations: ReLU (with max_value, negative_slope
// and threshold), LeakyReLU, PReLU (a learned slope per unit) and Softmax (any axis).
#pragma once

#include "kiln/keras/activations.h"
#include "kiln/keras/layers/layer.h"
#include "kiln/keras/layers/layer_options.h"

namespace kiln::keras {

struct ReLUOptions {
  std::optional<double> max_value = std::nullopt;  // none = unbounded
  double negative_slope = 0.0;
  double threshold = 0.0;
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// max_value if x >= max_value, x if threshold <= x < max_value, else negative_slope *
/// (x - threshold).
class ReLU : public Layer {
 public:
  explicit ReLU(ReLUOptions options = {});
  static ReLU from_config(const std::string& config_json);
  std::string class_name() const override { return "ReLU"; }
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  ReLUOptions options_;
};

/// x if x >= 0 else negative_slope * x. The config writes Keras 2's "alpha"; Keras 3's
/// "negative_slope" reads too.
class LeakyReLU : public Layer {
 public:
  explicit LeakyReLU(double negative_slope = activations::kLeakyReluLayerSlope, LayerOptions options = {});
  static LeakyReLU from_config(const std::string& config_json);
  std::string class_name() const override { return "LeakyReLU"; }
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  double negative_slope_;
};

struct PReLUOptions {
  Initializer alpha_initializer = "zeros";
  std::optional<Regularizer> alpha_regularizer = std::nullopt;
  std::optional<Constraint> alpha_constraint = std::nullopt;
  /// Axes (1-based, batch excluded) along which one alpha is shared: {1, 2} for one slope per
  /// channel of (batch, rows, cols, channels) images.
  Dims shared_axes = {};
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// x if x >= 0 else alpha * x, with the weight alpha of the per-example input shape (size 1
/// along shared_axes).
class PReLU : public Layer {
 public:
  explicit PReLU(PReLUOptions options = {});
  static PReLU from_config(const std::string& config_json);
  std::string class_name() const override { return "PReLU"; }
  std::string get_config() const override;
  const Variable& alpha() const { return self_as<PReLU>().alpha_; }

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  PReLUOptions options_;
  Variable alpha_;
};

/// Softmax along `axis` (Keras counts the batch axis: -1 is the last).
class Softmax : public Layer {
 public:
  explicit Softmax(int axis = -1, LayerOptions options = {});
  static Softmax from_config(const std::string& config_json);
  std::string class_name() const override { return "Softmax"; }
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  int axis_;
};

}  // namespace kiln::keras
