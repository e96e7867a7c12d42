// Flatten: (batch, d1, d2, ...) -> (batch, d1*d2*...); a reshape, free in the compiled step.
#pragma once

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct FlattenOptions {
  Dims input_shape = {};  // Keras input_shape= (first layer of a Sequential)
  std::string name = "";
};

class Flatten : public Layer {
 public:
  explicit Flatten(FlattenOptions options = {}) : Layer(options.name, options.input_shape) {}
  static Flatten from_config(const std::string& config_json);

  std::string class_name() const override { return "Flatten"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;
};

}  // namespace kiln::keras
