// Reshape: per-example reshape to target_shape (one entry may be -1), batch dim kept.
#pragma once

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct ReshapeOptions {
  Dims input_shape = {};
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

class Reshape : public Layer {
 public:
  explicit Reshape(Dims target_shape, ReshapeOptions options = {})
      : Layer(options.name, options.input_shape, options.dtype), target_shape_(std::move(target_shape)) {}
  static Reshape from_config(const std::string& config_json);
  std::string class_name() const override { return "Reshape"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  Dims target_shape_;
};

}  // namespace kiln::keras
