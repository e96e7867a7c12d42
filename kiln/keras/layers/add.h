// Add: the elementwise sum of its inputs (keras.layers.Add), the join of residual blocks.
#pragma once

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct AddOptions {
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Input: a list of >= 2 tensors of one shape, e.g. Add()({x, f(x)}). Output: their sum.
class Add : public Layer {
 public:
  explicit Add(AddOptions options = {}) : Layer(options.name, {}, options.dtype) {}
  static Add from_config(const std::string& config_json);
  std::string class_name() const override { return "Add"; }
  Dims compute_output_shape_multi(const std::vector<Dims>& input_shapes) const override;

 protected:
  void build_weights_multi(const std::vector<Dims>& input_shapes) override;
  Tensor call(const Tensor& x, bool training) override;
  Tensor call_multi(const std::vector<Tensor>& inputs, const CallFlags& flags, bool training) override;
};

}  // namespace kiln::keras
