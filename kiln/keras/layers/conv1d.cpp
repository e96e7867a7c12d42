// Conv1D: (N, L, C) is (N, L, 1, C) to the 2-D convolution, the kernel (K, C/g, F) is
// (K, 1, C/g, F), and "causal" is explicit padding of (K - 1) * dilation steps on the left.
#include "kiln/keras/layers/conv1d.h"

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/conv_utils_impl.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {

Conv1D::Conv1D(int64_t filters, int64_t kernel_size, Conv1DOptions options)
    : Layer(options.name, options.input_shape, options.dtype),
      filters_(filters),
      kernel_size_(kernel_size),
      options_(std::move(options)) {
  set_activity_regularizer(options_.activity_regularizer);
  const std::string at = where();
  if (filters <= 0) KILN_THROW(ValueError, "[", at, "] expected filters > 0, received filters=", filters, ".");
  if (kernel_size <= 0 || options_.strides <= 0 || options_.dilation_rate <= 0)
    KILN_THROW(ValueError, "[", at, "] expected kernel_size, strides and dilation_rate > 0, received ", kernel_size,
               ", ", options_.strides, ", ", options_.dilation_rate, ".");
  if (options_.padding != "causal") internal::check_padding(at, options_.padding);
  internal::check_data_format(at, options_.data_format);
  if (options_.groups < 1 || filters % options_.groups != 0)
    KILN_THROW(ValueError, "[", at, "] the number of filters must be divisible by groups, received filters=",
               filters, ", groups=", options_.groups, ".");
  options_.activation.check();
}

Dims Conv1D::compute_output_shape(const Dims& input_shape) const {
  if (input_shape.size() != 2)
    KILN_THROW(ShapeError, "[", where(), "] expected input (batch, steps, channels), received per-example shape ",
               dims_to_string(input_shape), ".");
  const bool first = options_.data_format == "channels_first";
  const int64_t steps = input_shape[first ? 1 : 0];
  // "causal" has "same"'s length: its left padding keeps every step.
  const std::string padding = options_.padding == "causal" ? "same" : options_.padding;
  const int64_t out = internal::spatial_output(where(), {steps, 1, 1}, {kernel_size_, 1}, padding,
                                               {options_.strides, 1}, {options_.dilation_rate, 1})[0];
  return first ? Dims{filters_, out} : Dims{out, filters_};
}

void Conv1D::build_weights(const Dims& input_shape) {
  compute_output_shape(input_shape);
  const int64_t channels = input_shape[options_.data_format == "channels_first" ? 0 : 1];
  if (channels % options_.groups != 0)
    KILN_THROW(ShapeError, "[", name(), "] the input channels (", channels, ") must be divisible by groups=",
               options_.groups, ".");
  kernel_ = add_weight("kernel", {kernel_size_, channels / options_.groups, filters_}, options_.kernel_initializer,
                       /*trainable=*/true, options_.kernel_regularizer, options_.kernel_constraint);
  if (options_.use_bias) bias_ = add_weight("bias", {filters_}, options_.bias_initializer, /*trainable=*/true,
                                         options_.bias_regularizer, options_.bias_constraint);
}

// x: (N, L, C)  kernel: (K, C / groups, F)  ->  (N, OL, F)
Tensor Conv1D::call(const Tensor& x_in, bool /*training*/) {
  const bool first = options_.data_format == "channels_first";
  const int64_t channels = kernel_.shape().dim(1) * options_.groups;
  if (x_in.rank() != 3 || x_in.dim(first ? 1 : 2) != channels)
    KILN_THROW(ShapeError, "[", name(), "] expected input ",
               first ? str_cat("(batch, ", channels, ", steps)") : str_cat("(batch, steps, ", channels, ")"),
               ", received ", x_in.shape(), ".");
  const Tensor x = first ? transpose(x_in, {0, 2, 1}) : x_in;
  Conv2DOptions o{.strides = {options_.strides, 1}, .padding = options_.padding,
                  .dilation = {options_.dilation_rate, 1}, .groups = options_.groups};
  if (options_.padding == "causal") {
    o.padding_low = {(kernel_size_ - 1) * options_.dilation_rate, 0};
    o.padding_high = {0, 0};
  }
  const Tensor w = reshape(kernel_, {kernel_size_, 1, kernel_.shape().dim(1), filters_});
  Tensor y = conv2d(reshape(x, {x.dim(0), x.dim(1), 1, x.dim(2)}), w, o);
  y = reshape(y, {y.dim(0), y.dim(1), filters_});
  return internal::conv_epilogue(y, options_.use_bias, bias_, options_.activation, first);
}

std::string Conv1D::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["filters"] = filters_;
  j["kernel_size"] = Dims{kernel_size_};
  j["strides"] = Dims{options_.strides};
  j["padding"] = options_.padding;
  j["data_format"] = options_.data_format;
  j["dilation_rate"] = Dims{options_.dilation_rate};
  j["groups"] = options_.groups;
  internal::put_kernel_fields(j, options_);
  return j.dump();
}

// Conv1D's keys in every Keras release beyond the kernel fields and the base layer's.
constexpr internal::ConfigKey kConv1DKeys[] = {
    {"filters"}, {"kernel_size"}, {"strides"}, {"padding"}, {"data_format"}, {"dilation_rate"}, {"groups"}};
Conv1D Conv1D::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Conv1D.from_config");
  internal::expect_layer_keys(
      j, {kConv1DKeys, internal::kernel_field_keys(), internal::lora_and_quantization_keys()}, "Conv1D");
  Conv1DOptions o;
  const int64_t kernel_size = internal::guarded("Conv1D.from_config", [&] {
    if (j.contains("strides")) o.strides = internal::single_from_json(j["strides"], "strides", "Conv1D");
    if (j.contains("dilation_rate"))
      o.dilation_rate = internal::single_from_json(j["dilation_rate"], "dilation_rate", "Conv1D");
    o.padding = j.value("padding", o.padding);
    if (j.contains("data_format") && !j["data_format"].is_null()) o.data_format = j["data_format"];
    o.groups = j.value("groups", o.groups);
    return internal::single_from_json(j.at("kernel_size"), "kernel_size", "Conv1D");
  });
  internal::get_kernel_fields(j, o);
  Conv1D c(internal::int_field(j, "filters", "Conv1D"), kernel_size, o);
  c.set_trainable(j.value("trainable", true));
  return c;
}

}  // namespace kiln::keras
