// Internal to keras/layers: the argument checks, output-length rule and (H, W) pair configs
// that Conv2D and the 2-D pooling layers share (Keras's conv_utils).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "kiln/core/shape.h"
#include "kiln/keras/activations.h"
#include "kiln/trace/variable.h"

namespace kiln::keras::internal {

/// Keras conv_utils.conv_output_length: "valid" floor((in - eff) / stride) + 1,
/// "same" ceil(in / stride), with eff = (window - 1) * dilation + 1.
int64_t conv_output_length(int64_t in, int64_t window, const std::string& padding, int64_t stride,
                           int64_t dilation = 1);
/// ValueError naming `layer` unless `value` holds two positive ints (`arg` = "strides", ...).
void check_pair(const std::string& layer, const char* arg, const Dims& value);
/// The checks every 2-D convolution layer makes (Keras's): kernel_size, strides and
/// dilation_rate pairs, padding and data_format.
void check_conv2d_args(const std::string& layer, const Dims& kernel_size, const Dims& strides,
                       const Dims& dilation_rate, const std::string& padding, const std::string& data_format);
/// ValueError unless padding is "valid" or "same".
void check_padding(const std::string& layer, const std::string& padding);
/// ConfigError unless data_format is "channels_last" or "channels_first". Kiln's kernels are
/// NHWC: a channels_first layer transposes its input to NHWC and its output back.
void check_data_format(const std::string& layer, const std::string& data_format);
/// Per-example (C, H, W) -> (H, W, C), and back.
Dims to_channels_last(const Dims& chw);
Dims to_channels_first(const Dims& hwc);
/// ShapeError unless the per-example input is (height, width, channels).
void check_image_input(const std::string& layer, const Dims& input_shape);
/// (OH, OW) of a window over the per-example (H, W, C) input; ShapeError when one is <= 0.
Dims spatial_output(const std::string& layer, const Dims& input_shape, const Dims& window,
                    const std::string& padding, const Dims& strides, const Dims& dilation);
/// The end every convolution layer shares: + bias (when used), the activation, and for
/// channels_first the channels-last result (N, ..., C) moved back to (N, C, ...).
Tensor conv_epilogue(Tensor y, bool use_bias, const Variable& bias, const ActivationArg& activation, bool channels_first);
/// The geometry fields of a 2-D convolution's config: kernel_size, strides, padding,
/// data_format and dilation_rate.
void put_conv2d_fields(nlohmann::json& j, const Dims& kernel_size, const Dims& strides, const std::string& padding,
                       const std::string& data_format, const Dims& dilation_rate);
/// A Keras (h, w) config value: an int n means (n, n).
Dims pair_from_json(const nlohmann::json& j);
/// A Keras 1-D size: [n] as Keras writes it, or an int n; ConfigError naming `layer` and
/// `key` otherwise.
int64_t single_from_json(const nlohmann::json& j, const char* key, const char* layer);

}  // namespace kiln::keras::internal
