// Conv2DTranspose: Keras's output-length rule, then conv_backward_input with the padding
// TensorFlow's conv2d_transpose uses ("same" worked out from the output size).
#include "kiln/keras/layers/conv2d_transpose.h"

#include <algorithm>

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/conv_utils_impl.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {
namespace {

// Keras conv_utils.deconv_output_length.
int64_t deconv_output_length(int64_t in, int64_t kernel, const std::string& padding,
                             const std::optional<int64_t>& output_padding, int64_t stride, int64_t dilation) {
  const int64_t k = (kernel - 1) * dilation + 1;
  if (!output_padding) return padding == "valid" ? in * stride + std::max<int64_t>(k - stride, 0) : in * stride;
  const int64_t pad = padding == "same" ? k / 2 : 0;
  return (in - 1) * stride + k - 2 * pad + *output_padding;
}

}  // namespace

Conv2DTranspose::Conv2DTranspose(int64_t filters, Dims kernel_size, Conv2DTransposeOptions options)
    : Layer(options.name, options.input_shape, options.dtype),
      filters_(filters),
      kernel_size_(std::move(kernel_size)),
      options_(std::move(options)) {
  set_activity_regularizer(options_.activity_regularizer);
  const std::string at = where();
  if (filters <= 0) KILN_THROW(ValueError, "[", at, "] expected filters > 0, received filters=", filters, ".");
  internal::check_conv2d_args(at, kernel_size_, options_.strides, options_.dilation_rate, options_.padding,
                              options_.data_format);
  if (const auto& op = options_.output_padding) {
    for (size_t i = 0; op->size() == 2 && i < 2; ++i)
      if ((*op)[i] < 0 || (*op)[i] >= options_.strides[i])
        KILN_THROW(ValueError, "[", at, "] output_padding=", dims_to_string(*op), " must be >= 0 and less than strides=",
                   dims_to_string(options_.strides), " in each dim.");
    if (op->size() != 2) KILN_THROW(ValueError, "[", at, "] output_padding must be two ints, received ", dims_to_string(*op), ".");
  }
  options_.activation.check();
}

Dims Conv2DTranspose::compute_output_shape(const Dims& input_shape) const {
  const bool first = options_.data_format == "channels_first";
  const Dims hwc = first ? internal::to_channels_last(input_shape) : input_shape;
  internal::check_image_input(where(), hwc);
  Dims out(2);
  for (size_t i = 0; i < 2; ++i) {
    const std::optional<int64_t> op =
        options_.output_padding ? std::optional<int64_t>((*options_.output_padding)[i]) : std::nullopt;
    out[i] = deconv_output_length(hwc[i], kernel_size_[i], options_.padding, op, options_.strides[i],
                                  options_.dilation_rate[i]);
    // The convolution this transposes must map the output back to the input's size.
    if (out[i] <= 0 || internal::conv_output_length(out[i], kernel_size_[i], options_.padding, options_.strides[i],
                                                    options_.dilation_rate[i]) != hwc[i])
      KILN_THROW(ShapeError, "[", where(), "] no output size fits the input ", dims_to_string(input_shape),
                 " with kernel_size=", dims_to_string(kernel_size_), ", strides=", dims_to_string(options_.strides),
                 ", padding=\"", options_.padding, "\" and this output_padding. Hint: change output_padding.");
  }
  out.push_back(filters_);
  return first ? internal::to_channels_first(out) : out;
}

void Conv2DTranspose::build_weights(const Dims& input_shape) {
  compute_output_shape(input_shape);
  const int64_t channels = options_.data_format == "channels_first" ? input_shape[0] : input_shape[2];
  kernel_ = add_weight("kernel", {kernel_size_[0], kernel_size_[1], filters_, channels}, options_.kernel_initializer,
                       /*trainable=*/true, options_.kernel_regularizer, options_.kernel_constraint);
  if (options_.use_bias) bias_ = add_weight("bias", {filters_}, options_.bias_initializer, /*trainable=*/true,
                                         options_.bias_regularizer, options_.bias_constraint);
}

// x: (N, H, W, C)  kernel: (KH, KW, F, C)  ->  (N, OH, OW, F): the kernel maps F -> C in the
// convolution this one transposes.
Tensor Conv2DTranspose::call(const Tensor& x_in, bool /*training*/) {
  const bool first = options_.data_format == "channels_first";
  const int64_t channels = kernel_.shape().dim(3);
  if (x_in.rank() != 4 || x_in.dim(first ? 1 : -1) != channels)
    KILN_THROW(ShapeError, "[", name(), "] expected input ",
               first ? str_cat("(batch, ", channels, ", height, width)") : str_cat("(batch, height, width, ", channels, ")"),
               ", received ", x_in.shape(), ".");
  const Tensor x = first ? transpose(x_in, {0, 2, 3, 1}) : x_in;
  Dims out = compute_output_shape(Dims(x_in.dims().begin() + 1, x_in.dims().end()));
  if (first) out = internal::to_channels_last(out);
  Tensor y = conv2d_transpose(x, kernel_, {x.dim(0), out[0], out[1], out[2]},
                              {.strides = options_.strides, .padding = options_.padding, .dilation = options_.dilation_rate});
  return internal::conv_epilogue(y, options_.use_bias, bias_, options_.activation, first);
}

// Keras 2 and 3 both read this form; "groups" stays out (Keras 3's Conv2DTranspose rejects it).
std::string Conv2DTranspose::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["filters"] = filters_;
  internal::put_conv2d_fields(j, kernel_size_, options_.strides, options_.padding, options_.data_format,
                              options_.dilation_rate);
  j["output_padding"] = options_.output_padding ? nlohmann::json(*options_.output_padding) : nlohmann::json(nullptr);
  internal::put_kernel_fields(j, options_);
  return j.dump();
}

// Conv2DTranspose's keys in every Keras release beyond the kernel fields and the base
// layer's (tf.keras 2.x writes groups: 1, checked below).
constexpr internal::ConfigKey kConv2DTransposeKeys[] = {{"filters"},     {"kernel_size"},    {"strides"},
                                                        {"padding"},     {"output_padding"}, {"data_format"},
                                                        {"dilation_rate"}, {"groups"}};
Conv2DTranspose Conv2DTranspose::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Conv2DTranspose.from_config");
  internal::expect_layer_keys(j, {kConv2DTransposeKeys, internal::kernel_field_keys()}, "Conv2DTranspose");
  Conv2DTransposeOptions o;
  const Dims kernel_size = internal::guarded("Conv2DTranspose.from_config", [&] {
    if (j.contains("strides")) o.strides = internal::pair_from_json(j["strides"]);
    o.padding = j.value("padding", o.padding);
    if (j.contains("output_padding") && !j["output_padding"].is_null())
      o.output_padding = internal::pair_from_json(j["output_padding"]);
    if (j.contains("data_format") && !j["data_format"].is_null()) o.data_format = j["data_format"];
    if (j.contains("dilation_rate")) o.dilation_rate = internal::pair_from_json(j["dilation_rate"]);
    return internal::pair_from_json(j.at("kernel_size"));
  });
  if (j.value("groups", 1) != 1)  // tf.keras 2 writes groups: 1
    KILN_THROW(ConfigError, "[", j.value("name", "Conv2DTranspose"), "] groups=", j["groups"].dump(),
               " is not supported for Conv2DTranspose. Hint: Keras's own Conv2DTranspose supports only groups=1.");
  internal::get_kernel_fields(j, o);
  Conv2DTranspose c(internal::int_field(j, "filters", "Conv2DTranspose"), kernel_size, o);
  c.set_trainable(j.value("trainable", true));
  return c;
}

}  // namespace kiln::keras
