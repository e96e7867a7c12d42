// Concatenate: joins its inputs along one axis (keras.layers.Concatenate(axis=-1)).
#pragma once

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct ConcatenateOptions {
  int axis = -1;  // counted with the batch dim, as in Keras; -1 is the last
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Input: a list of >= 2 tensors equal in every dim but `axis`. Output: them joined on `axis`.
class Concatenate : public Layer {
 public:
  explicit Concatenate(ConcatenateOptions options = {}) : Layer(options.name, {}, options.dtype), axis_(options.axis) {}
  static Concatenate from_config(const std::string& config_json);
  std::string class_name() const override { return "Concatenate"; }
  std::string get_config() const override;
  Dims compute_output_shape_multi(const std::vector<Dims>& input_shapes) const override;
  int axis() const { return axis_; }

 protected:
  void build_weights_multi(const std::vector<Dims>& input_shapes) override;
  Tensor call(const Tensor& x, bool training) override;
  Tensor call_multi(const std::vector<Tensor>& inputs, const CallFlags& flags, bool training) override;

 private:
  int axis_;
};

}  // namespace kiln::keras
