// The shared argument checks and output-length rule of Conv2D and the pooling layers.
#include "kiln/keras/layers/conv_utils_impl.h"

#include "kiln/core/check.h"

namespace kiln::keras::internal {

int64_t conv_output_length(int64_t in, int64_t window, const std::string& padding, int64_t stride,
                           int64_t dilation) {
  const int64_t effective = (window - 1) * dilation + 1;
  if (padding == "same") return (in + stride - 1) / stride;
  return in < effective ? 0 : (in - effective) / stride + 1;
}

void check_pair(const std::string& layer, const char* arg, const Dims& value) {
  if (value.size() != 2 || value[0] <= 0 || value[1] <= 0)
    KILN_THROW(ValueError, "[", layer, "] expected ", arg, " to be two positive ints (height, width), received ",
               dims_to_string(value), ".");
}

void check_padding(const std::string& layer, const std::string& padding) {
  if (padding != "valid" && padding != "same")
    KILN_THROW(ValueError, "[", layer, "] padding='", padding, "' is not supported. Hint: use \"valid\" or \"same\".");
}

void check_data_format(const std::string& layer, const std::string& data_format) {
  if (data_format != "channels_last" && data_format != "channels_first")
    KILN_THROW(ConfigError, "[", layer, "] data_format='", data_format,
               "' is not a Keras data format. Hint: use \"channels_last\" (NHWC) or \"channels_first\" (NCHW).");
}

Dims to_channels_last(const Dims& chw) {
  if (chw.size() != 3) return chw;  // check_image_input reports the rank
  return {chw[1], chw[2], chw[0]};
}

Dims to_channels_first(const Dims& hwc) {
  if (hwc.size() != 3) return hwc;
  return {hwc[2], hwc[0], hwc[1]};
}

void check_image_input(const std::string& layer, const Dims& input_shape) {
  if (input_shape.size() != 3)
    KILN_THROW(ShapeError, "[", layer, "] expected input of shape (batch, height, width, channels), received ",
               "per-example shape ", dims_to_string(input_shape),
               ". Hint: add the channel dim (Reshape({28, 28, 1}) for grayscale images).");
}

Dims spatial_output(const std::string& layer, const Dims& input_shape, const Dims& window,
                    const std::string& padding, const Dims& strides, const Dims& dilation) {
  check_image_input(layer, input_shape);
  Dims out(2);
  for (size_t i = 0; i < 2; ++i) {
    out[i] = conv_output_length(input_shape[i], window[i], padding, strides[i], dilation[i]);
    if (out[i] <= 0)
      KILN_THROW(ShapeError, "[", layer, "] the window ", dims_to_string(window), " (dilation ",
                 dims_to_string(dilation), ") does not fit the input ", dims_to_string(input_shape),
                 " with padding=\"", padding, "\": an output dimension would be <= 0. Hint: use a larger "
                 "input, a smaller window, or padding=\"same\".");
  }
  return out;
}

Dims pair_from_json(const nlohmann::json& j) {
  if (j.is_number_integer()) return {j.get<int64_t>(), j.get<int64_t>()};
  return j.get<Dims>();
}

}  // namespace kiln::keras::internal
