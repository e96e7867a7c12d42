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
  explicit InputLayer(InputLayerOptions options = {}) : Layer(options.name, options.shape) {}
  static InputLayer from_config(const std::string& config_json);
  std::string class_name() const override { return "InputLayer"; }

 protected:
  Tensor call(const Tensor& x, bool /*training*/) override { return x; }
};

}  // namespace kiln::keras
