// Add: the elementwise sum of its inputs (keras.layers.Add), the join of residual blocks.
#pragma once

#include "kiln/keras/layers/merging.h"

namespace kiln::keras {

using AddOptions = MergeOptions;

/// Input: a list of >= 2 tensors of one shape, e.g. Add()({x, f(x)}). Output: their sum.
class Add : public ElementwiseMerge {
 public:
  explicit Add(MergeOptions options = {}) : ElementwiseMerge(options) {}
  static Add from_config(const std::string& config_json) { return from_merge_config<Add>(config_json, "Add"); }
  std::string class_name() const override { return "Add"; }

 protected:
  Tensor combine(const std::vector<Tensor>& inputs) const override;
};

}  // namespace kiln::keras
