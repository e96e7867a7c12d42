// GlobalAveragePooling2D: the mean over height and width of NHWC images
// (keras.layers.GlobalAveragePooling2D).
#pragma once

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct GlobalAveragePooling2DOptions {
  std::string data_format = "channels_last";  // or "channels_first" (mean over axes 2, 3)
  bool keepdims = false;  // true keeps (1, 1, channels)
  Dims input_shape = {};
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Input shape: (batch, height, width, channels). Output shape: (batch, channels), or
/// (batch, 1, 1, channels) with keepdims.
class GlobalAveragePooling2D : public Layer {
 public:
  explicit GlobalAveragePooling2D(GlobalAveragePooling2DOptions options = {});
  static GlobalAveragePooling2D from_config(const std::string& config_json);
  std::string class_name() const override { return "GlobalAveragePooling2D"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::string where() const { return name().empty() ? class_name() : name(); }

  GlobalAveragePooling2DOptions options_;
};

}  // namespace kiln::keras
