// Rescaling (keras.layers.Rescaling): x * scale + offset, in the compute dtype. Images arrive as
// u8 or f32 samples in [0, 255]; Rescaling(1.0 / 255) inside the model maps them to [0, 1], so the
// model saved with it takes raw pixels.
#pragma once

#include "kiln/keras/layers/layer.h"
#include "kiln/keras/layers/layer_options.h"

namespace kiln::keras {

/// Args: scale, offset (Keras's order and default offset 0). Inputs of any real or integer
/// dtype are cast to the compute dtype first, as Keras's Rescaling does. Kiln takes scalar
/// scale and offset (Keras 3 also takes one per channel).
class Rescaling : public Layer {
 public:
  explicit Rescaling(double scale, double offset = 0.0, LayerOptions options = {});
  static Rescaling from_config(const std::string& config_json);
  std::string class_name() const override { return "Rescaling"; }
  std::string get_config() const override;
  double scale() const { return scale_; }
  double offset() const { return offset_; }

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  double scale_;
  double offset_;
};

}  // namespace kiln::keras
