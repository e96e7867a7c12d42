// The shared argument checks and output-length rule of Conv2D and the pooling layers.
#include "kiln/keras/layers/conv_utils_impl.h"

#include "kiln/core/check.h"
#include "kiln/keras/layers/layer.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras::internal {

int64_t conv_output_length(int64_t in, int64_t window, const std::string& padding, int64_t stride,
                           int64_t dilation) {
  if (in == kNoneDim) return kNoneDim;  // Keras: a None length stays None (each call gives it)
  const int64_t effective = (window - 1) * dilation + 1;
  if (padding == "same") return (in + stride - 1) / stride;
  return in < effective ? 0 : (in - effective) / stride + 1;
}

void check_pair(const std::string& layer, const char* arg, const Dims& value) {
  if (value.size() != 2 || value[0] <= 0 || value[1] <= 0)
    KILN_THROW(ValueError, "[", layer, "] expected ", arg, " to be two positive ints (height, width), received ",
               dims_to_string(value), ".");
}

void check_conv2d_args(const std::string& layer, const Dims& kernel_size, const Dims& strides,
                       const Dims& dilation_rate, const std::string& padding, const std::string& data_format) {
  check_pair(layer, "kernel_size", kernel_size);
  check_pair(layer, "strides", strides);
  check_pair(layer, "dilation_rate", dilation_rate);
  check_padding(layer, padding);
  check_data_format(layer, data_format);
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
    if (out[i] <= 0 && out[i] != kNoneDim)
      KILN_THROW(ShapeError, "[", layer, "] the window ", dims_to_string(window), " (dilation ",
                 dims_to_string(dilation), ") does not fit the input ", dims_to_string(input_shape),
                 " with padding=\"", padding, "\": an output dimension would be <= 0. Hint: use a larger "
                 "input, a smaller window, or padding=\"same\".");
  }
  return out;
}

Tensor conv_epilogue(Tensor y, bool use_bias, const Variable& bias, const ActivationArg& activation, bool channels_first) {
  if (use_bias) y = y + bias;
  y = activation(y);
  if (!channels_first) return y;
  Dims perm{0, y.rank() - 1};
  for (int64_t i = 1; i + 1 < y.rank(); ++i) perm.push_back(i);
  return transpose(y, perm);
}

void put_conv2d_fields(nlohmann::json& j, const Dims& kernel_size, const Dims& strides, const std::string& padding,
                       const std::string& data_format, const Dims& dilation_rate) {
  j["kernel_size"] = kernel_size;
  j["strides"] = strides;
  j["padding"] = padding;
  j["data_format"] = data_format;
  j["dilation_rate"] = dilation_rate;
}

Dims pair_from_json(const nlohmann::json& j) {
  if (j.is_number_integer()) return {j.get<int64_t>(), j.get<int64_t>()};
  return j.get<Dims>();
}

int64_t single_from_json(const nlohmann::json& j, const char* key, const char* layer) {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_array() && j.size() == 1 && j[0].is_number_integer()) return j[0].get<int64_t>();
  KILN_THROW(ConfigError, "[", layer, "] ", key, " must be an int or a list of one int, received ", j.dump(), ".");
}

}  // namespace kiln::keras::internal
