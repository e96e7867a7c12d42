// Activation: applies an activation (keras.layers.Activation("relu")), named or a C++ callable.
#pragma once

#include "kiln/keras/activations.h"
#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct ActivationOptions {
  Dims input_shape = {};
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

class Activation : public Layer {
 public:
  explicit Activation(ActivationArg activation, ActivationOptions options = {});
  static Activation from_config(const std::string& config_json);
  std::string class_name() const override { return "Activation"; }
  bool supports_masking() const override { return true; }  // per-step, as in Keras
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  ActivationArg activation_;
};

}  // namespace kiln::keras
