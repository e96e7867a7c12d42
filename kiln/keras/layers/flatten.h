// Flatten: (batch, d1, d2, ...) -> (batch, d1*d2*...); a reshape, free in the compiled step.
#pragma once

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct FlattenOptions {
  /// "channels_first": Keras >= 2.2.3 moves axis 1 last before flattening, so the result (and
  /// the next Dense kernel) is in channels_last order.
  std::string data_format = "channels_last";
  Dims input_shape = {};  // Keras input_shape= (first layer of a Sequential)
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

class Flatten : public Layer {
 public:
  explicit Flatten(FlattenOptions options = {});
  static Flatten from_config(const std::string& config_json);

  std::string class_name() const override { return "Flatten"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::string data_format_;
};

}  // namespace kiln::keras
