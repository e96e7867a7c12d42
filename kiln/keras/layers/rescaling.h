// Rescaling (keras.layers.Rescaling): x * scale + offset, in the compute dtype. Images arrive as
// u8 or f32 samples in [0, 255]; Rescaling(1.0 / 255) inside the model maps them to [0, 1], so the
// model saved with it takes raw pixels. A list of scales (or offsets) applies one per channel, as
// EfficientNet's stem does (Keras 3, tf-keras 2.15: Rescaling([1 / sqrt(s) for s in stddev])).
#pragma once

#include <vector>

#include "kiln/keras/layers/layer.h"
#include "kiln/keras/layers/layer_options.h"

namespace kiln::keras {

/// Args: scale, offset (Keras's order and default offset 0). Inputs of any real or integer
/// dtype are cast to the compute dtype first, as Keras's Rescaling does. Each is one number, or
/// one per channel of the last axis (NumPy broadcasting, as Keras 3 computes `x * scale +
/// offset` for channels_last data).
class Rescaling : public Layer {
 public:
  explicit Rescaling(double scale, double offset = 0.0, LayerOptions options = {});
  /// Per-channel scales and offsets (a list of one is a single number).
  Rescaling(std::vector<double> scale, std::vector<double> offset, LayerOptions options = {});
  static Rescaling from_config(const std::string& config_json);
  std::string class_name() const override { return "Rescaling"; }
  std::string get_config() const override;
  Dims compute_output_shape(const Dims& input_shape) const override;
  const std::vector<double>& scale() const { return scale_; }
  const std::vector<double>& offset() const { return offset_; }

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::vector<double> scale_;
  std::vector<double> offset_;
};

}  // namespace kiln::keras
