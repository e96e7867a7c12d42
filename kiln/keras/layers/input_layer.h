// InputLayer: declares the per-example input shape of a Sequential (keras.Input(shape=...));
// an identity at run time, not listed by summary() (as in Keras).
#pragma once

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct InputLayerOptions {
  Dims shape = {};  // per example, batch excluded
  std::string name = "";
};

class InputLayer : public Layer {
 public:
  // Always "float32": an InputLayer declares the input and computes nothing (its config's
  // "dtype" is the input's dtype, not a policy).
  explicit InputLayer(InputLayerOptions options = {}) : Layer(options.name, options.shape, mixed_precision::Policy()) {}
  static InputLayer from_config(const std::string& config_json);
  std::string class_name() const override { return "InputLayer"; }
  bool autocast() const override { return false; }

 protected:
  Tensor call(const Tensor& x, bool /*training*/) override { return x; }
};

}  // namespace kiln::keras
