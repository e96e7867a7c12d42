// Masking: marks the time steps whose features all equal mask_value as padding
// (keras.layers.Masking), for the recurrent layers after it to skip.
#pragma once

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct MaskingOptions {
  double mask_value = 0.0;
  Dims input_shape = {};  // (time, features)
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Input (batch, time, ...). Mask: any(x != mask_value) over the last axis, (batch, time).
/// Output: x with the masked steps zeroed, as Keras computes it.
class Masking : public Layer {
 public:
  explicit Masking(MaskingOptions options = {});
  static Masking from_config(const std::string& config_json);
  std::string class_name() const override { return "Masking"; }
  bool supports_masking() const override { return true; }
  Tensor compute_mask(const Tensor& x, const Tensor& mask) const override;
  std::string get_config() const override;
  double mask_value() const { return mask_value_; }

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  double mask_value_;
};

}  // namespace kiln::keras
