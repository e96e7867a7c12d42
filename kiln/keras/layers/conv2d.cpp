// Conv2D: argument checks (Keras's), weights (kh, kw, c / groups, filters), the forward chain
// and the Keras config.
#include "kiln/keras/layers/conv2d.h"

#include "kiln/core/check.h"
#include "kiln/keras/activations.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/conv_utils_impl.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {

Conv2D::Conv2D(int64_t filters, Dims kernel_size, Conv2DLayerOptions options)
    : Layer(options.name, options.input_shape, options.dtype),
      filters_(filters),
      kernel_size_(std::move(kernel_size)),
      options_(std::move(options)) {
  set_activity_regularizer(options_.activity_regularizer);
  const std::string at = where();
  if (filters <= 0) KILN_THROW(ValueError, "[", at, "] expected filters > 0, received filters=", filters, ".");
  internal::check_conv2d_args(at, kernel_size_, options_.strides, options_.dilation_rate, options_.padding,
                              options_.data_format);
  if (options_.groups < 1 || filters % options_.groups != 0)
    KILN_THROW(ValueError, "[", at, "] the number of filters must be divisible by groups, received filters=",
               filters, ", groups=", options_.groups, ".");
  options_.activation.check();  // unknown names fail at construction, as in Keras
}

Dims Conv2D::compute_output_shape(const Dims& input_shape) const {
  const bool first = options_.data_format == "channels_first";
  Dims out = internal::spatial_output(where(), first ? internal::to_channels_last(input_shape) : input_shape,
                                      kernel_size_, options_.padding, options_.strides, options_.dilation_rate);
  out.push_back(filters_);
  return first ? internal::to_channels_first(out) : out;
}

void Conv2D::build_weights(const Dims& input_shape) {
  compute_output_shape(input_shape);  // rank and window checks
  const int64_t channels = options_.data_format == "channels_first" ? input_shape[0] : input_shape[2];
  if (channels % options_.groups != 0)
    KILN_THROW(ShapeError, "[", name(), "] the input channels (", channels, ") must be divisible by groups=",
               options_.groups, ". Hint: change groups or the previous layer's channels.");
  kernel_ = add_weight("kernel", {kernel_size_[0], kernel_size_[1], channels / options_.groups, filters_},
                       options_.kernel_initializer, /*trainable=*/true, options_.kernel_regularizer,
                       options_.kernel_constraint);
  if (options_.use_bias) bias_ = add_weight("bias", {filters_}, options_.bias_initializer, /*trainable=*/true,
                                         options_.bias_regularizer, options_.bias_constraint);
}

// x: (N, H, W, C)  kernel: (KH, KW, C / groups, F)  ->  (N, OH, OW, F)
// channels_first: x (N, C, H, W) is transposed to NHWC and the result back to (N, F, OH, OW);
// the kernel layout is the same in both formats (Keras's).
Tensor Conv2D::call(const Tensor& x_in, bool /*training*/) {
  const bool first = options_.data_format == "channels_first";
  const int64_t channels = kernel_.shape().dim(2) * options_.groups;
  if (x_in.rank() != 4 || x_in.dim(first ? 1 : -1) != channels)
    KILN_THROW(ShapeError, "[", name(), "] expected input ",
               first ? str_cat("(batch, ", channels, ", height, width)") : str_cat("(batch, height, width, ", channels, ")"),
               ", received ", x_in.shape(), ". Hint: check the previous layer's output shape (model.summary()).");
  const Tensor x = first ? transpose(x_in, {0, 2, 3, 1}) : x_in;
  compute_output_shape(Dims(x_in.dims().begin() + 1, x_in.dims().end()));
  Tensor y = conv2d(x, kernel_, {.strides = options_.strides,
                                 .padding = options_.padding,
                                 .dilation = options_.dilation_rate,
                                 .groups = options_.groups});
  return internal::conv_epilogue(y, options_.use_bias, bias_, options_.activation, first);
}

std::string Conv2D::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["filters"] = filters_;
  internal::put_conv2d_fields(j, kernel_size_, options_.strides, options_.padding, options_.data_format,
                              options_.dilation_rate);
  j["groups"] = options_.groups;
  internal::put_kernel_fields(j, options_);
  return j.dump();
}

// Conv2D's keys in every Keras release beyond the kernel fields and the base layer's.
constexpr internal::ConfigKey kConv2DKeys[] = {
    {"filters"}, {"kernel_size"}, {"strides"}, {"padding"}, {"data_format"}, {"dilation_rate"}, {"groups"}};
Conv2D Conv2D::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Conv2D.from_config");
  internal::expect_layer_keys(
      j, {kConv2DKeys, internal::kernel_field_keys(), internal::lora_and_quantization_keys()}, "Conv2D");
  Conv2DLayerOptions o;
  if (j.contains("strides")) o.strides = internal::pair_from_json(j["strides"]);
  o.padding = j.value("padding", o.padding);
  if (j.contains("data_format") && !j["data_format"].is_null()) o.data_format = j["data_format"];
  if (j.contains("dilation_rate")) o.dilation_rate = internal::pair_from_json(j["dilation_rate"]);
  o.groups = j.value("groups", o.groups);
  internal::get_kernel_fields(j, o);
  Conv2D c(internal::int_field(j, "filters", "Conv2D"), internal::pair_from_json(j.at("kernel_size")), o);
  c.set_trainable(j.value("trainable", true));
  return c;
}

}  // namespace kiln::keras
