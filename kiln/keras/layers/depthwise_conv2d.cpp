// DepthwiseConv2D and SeparableConv2D: the depthwise kernel (KH, KW, C, M) is the grouped
// convolution's filter (KH, KW, 1, C * M) with groups = C; SeparableConv2D adds a 1x1 conv.
#include "kiln/keras/layers/depthwise_conv2d.h"

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/conv_utils_impl.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {
namespace {

std::string where(const Layer& l, const std::string& option_name) {
  if (!l.name().empty()) return l.name();
  return option_name.empty() ? l.class_name() : option_name;
}

// The argument checks both layers share (Keras's).
template <typename Options>
void check_depthwise_args(const std::string& at, const Dims& kernel_size, Options& o) {
  internal::check_conv2d_args(at, kernel_size, o.strides, o.dilation_rate, o.padding, o.data_format);
  if (o.depth_multiplier <= 0)
    KILN_THROW(ValueError, "[", at, "] expected depth_multiplier > 0, received depth_multiplier=", o.depth_multiplier, ".");
  o.activation.check();
}

// (OH, OW, out_channels) of the depthwise step over a per-example input (either format).
template <typename Options>
Dims depthwise_output(const std::string& at, const Dims& input_shape, const Dims& kernel_size, const Options& o,
                      int64_t out_channels) {
  const bool first = o.data_format == "channels_first";
  Dims out = internal::spatial_output(at, first ? internal::to_channels_last(input_shape) : input_shape, kernel_size,
                                      o.padding, o.strides, o.dilation_rate);
  out.push_back(out_channels);
  return first ? internal::to_channels_first(out) : out;
}

// x: (N, H, W, C)  kernel: (KH, KW, C, M)  ->  (N, OH, OW, C * M)
template <typename Options>
Tensor depthwise(const Tensor& x, const Variable& kernel, const Options& o) {
  const Shape& k = kernel.shape();
  const Tensor w = reshape(kernel, {k.dim(0), k.dim(1), 1, k.dim(2) * k.dim(3)});
  return conv2d(x, w, {.strides = o.strides, .padding = o.padding, .dilation = o.dilation_rate, .groups = k.dim(2)});
}

int64_t input_channels(const std::string& at, const Tensor& x, const std::string& data_format, int64_t expected) {
  const bool first = data_format == "channels_first";
  if (x.rank() != 4 || x.dim(first ? 1 : 3) != expected)
    KILN_THROW(ShapeError, "[", at, "] expected input ",
               first ? str_cat("(batch, ", expected, ", height, width)") : str_cat("(batch, height, width, ", expected, ")"),
               ", received ", x.shape(), ".");
  return expected;
}

// The config fields both layers write beside their weights' fields.
template <typename Options>
void put_depthwise_fields(nlohmann::json& j, const Dims& kernel_size, const Options& o, const std::string& layer) {
  internal::put_conv2d_fields(j, kernel_size, o.strides, o.padding, o.data_format, o.dilation_rate);
  j["depth_multiplier"] = o.depth_multiplier;
  j["activation"] = o.activation.config_name(layer);
  j["use_bias"] = o.use_bias;
  j["activity_regularizer"] = nullptr;
  internal::put_weight_fields(j, "depthwise", o.depthwise_initializer, o.depthwise_regularizer, o.depthwise_constraint);
  internal::put_weight_fields(j, "bias", o.bias_initializer, o.bias_regularizer, o.bias_constraint);
}

template <typename Options>
Dims get_depthwise_fields(const nlohmann::json& j, Options& o, const char* where_) {
  o.name = j.value("name", "");
  const Dims kernel_size = internal::guarded(where_, [&] {
    if (j.contains("strides")) o.strides = internal::pair_from_json(j["strides"]);
    o.padding = j.value("padding", o.padding);
    o.depth_multiplier = j.value("depth_multiplier", o.depth_multiplier);
    if (j.contains("data_format") && !j["data_format"].is_null()) o.data_format = j["data_format"];
    if (j.contains("dilation_rate")) o.dilation_rate = internal::pair_from_json(j["dilation_rate"]);
    o.use_bias = j.value("use_bias", true);
    return internal::pair_from_json(j.at("kernel_size"));
  });
  o.activation = j.contains("activation") ? internal::activation_from_json(j["activation"]) : "";
  internal::get_weight_fields(j, "depthwise", &o.depthwise_initializer, &o.depthwise_regularizer, &o.depthwise_constraint);
  internal::get_weight_fields(j, "bias", &o.bias_initializer, &o.bias_regularizer, &o.bias_constraint);
  if (j.value("groups", 1) != 1)  // tf.keras 2 writes groups: 1
    KILN_THROW(ConfigError, "[", o.name.empty() ? where_ : o.name, "] groups=", j["groups"].dump(),
               " is not supported here. Hint: Keras's depthwise layers take only groups=1.");
  o.input_shape = internal::input_shape_from(j);
  return kernel_size;
}

}  // namespace

// ---- DepthwiseConv2D -------------------------------------------------------------------------

DepthwiseConv2D::DepthwiseConv2D(Dims kernel_size, DepthwiseConv2DOptions options)
    : Layer(options.name, options.input_shape, options.dtype), kernel_size_(std::move(kernel_size)),
      options_(std::move(options)) {
  check_depthwise_args(options_.name.empty() ? "DepthwiseConv2D" : options_.name, kernel_size_, options_);
}

Dims DepthwiseConv2D::compute_output_shape(const Dims& input_shape) const {
  const std::string at = where(*this, options_.name);
  internal::check_image_input(at, input_shape);
  const int64_t channels = options_.data_format == "channels_first" ? input_shape[0] : input_shape[2];
  return depthwise_output(at, input_shape, kernel_size_, options_, channels * options_.depth_multiplier);
}

void DepthwiseConv2D::build_weights(const Dims& input_shape) {
  const Dims out = compute_output_shape(input_shape);
  const int64_t channels = options_.data_format == "channels_first" ? input_shape[0] : input_shape[2];
  depthwise_kernel_ = add_weight("depthwise_kernel", {kernel_size_[0], kernel_size_[1], channels, options_.depth_multiplier},
                                 options_.depthwise_initializer, /*trainable=*/true, options_.depthwise_regularizer,
                                 options_.depthwise_constraint);
  if (options_.use_bias)
    bias_ = add_weight("bias", {channels * options_.depth_multiplier}, options_.bias_initializer, /*trainable=*/true,
                       options_.bias_regularizer, options_.bias_constraint);
}

Tensor DepthwiseConv2D::call(const Tensor& x_in, bool /*training*/) {
  const bool first = options_.data_format == "channels_first";
  input_channels(name(), x_in, options_.data_format, depthwise_kernel_.shape().dim(2));
  compute_output_shape(Dims(x_in.dims().begin() + 1, x_in.dims().end()));
  const Tensor x = first ? transpose(x_in, {0, 2, 3, 1}) : x_in;
  Tensor y = depthwise(x, depthwise_kernel_, options_);
  return internal::conv_epilogue(y, options_.use_bias, bias_, options_.activation, first);
}

// Keras 2 and 3 both read this form; "groups" stays out (Keras 3's DepthwiseConv2D rejects it).
std::string DepthwiseConv2D::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  put_depthwise_fields(j, kernel_size_, options_, name());
  return j.dump();
}

// DepthwiseConv2D's keys (Keras 2.1.5+; tf.keras 2.x also writes groups: 1, checked below).
constexpr internal::ConfigKey kDepthwiseConv2DKeys[] = {
    {"kernel_size"},           {"strides"},          {"padding"},          {"depth_multiplier"},
    {"data_format"},           {"dilation_rate"},    {"activation"},       {"use_bias"},
    {"depthwise_initializer"}, {"bias_initializer"}, {"depthwise_regularizer"}, {"bias_regularizer"},
    {"depthwise_constraint"},  {"bias_constraint"},  {"groups"}};
DepthwiseConv2D DepthwiseConv2D::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "DepthwiseConv2D.from_config");
  internal::expect_layer_keys(j, {kDepthwiseConv2DKeys}, "DepthwiseConv2D");
  DepthwiseConv2DOptions o;
  const Dims kernel_size = get_depthwise_fields(j, o, "DepthwiseConv2D.from_config");
  DepthwiseConv2D l(kernel_size, o);
  l.set_trainable(j.value("trainable", true));
  return l;
}

// ---- SeparableConv2D -------------------------------------------------------------------------

SeparableConv2D::SeparableConv2D(int64_t filters, Dims kernel_size, SeparableConv2DOptions options)
    : Layer(options.name, options.input_shape, options.dtype), filters_(filters), kernel_size_(std::move(kernel_size)),
      options_(std::move(options)) {
  const std::string at = options_.name.empty() ? "SeparableConv2D" : options_.name;
  if (filters <= 0) KILN_THROW(ValueError, "[", at, "] expected filters > 0, received filters=", filters, ".");
  check_depthwise_args(at, kernel_size_, options_);
}

Dims SeparableConv2D::compute_output_shape(const Dims& input_shape) const {
  const std::string at = where(*this, options_.name);
  internal::check_image_input(at, input_shape);
  return depthwise_output(at, input_shape, kernel_size_, options_, filters_);
}

void SeparableConv2D::build_weights(const Dims& input_shape) {
  compute_output_shape(input_shape);
  const int64_t channels = options_.data_format == "channels_first" ? input_shape[0] : input_shape[2];
  const int64_t m = options_.depth_multiplier;
  depthwise_kernel_ = add_weight("depthwise_kernel", {kernel_size_[0], kernel_size_[1], channels, m},
                                 options_.depthwise_initializer, /*trainable=*/true, options_.depthwise_regularizer,
                                 options_.depthwise_constraint);
  pointwise_kernel_ = add_weight("pointwise_kernel", {1, 1, channels * m, filters_}, options_.pointwise_initializer,
                                 /*trainable=*/true, options_.pointwise_regularizer, options_.pointwise_constraint);
  if (options_.use_bias) bias_ = add_weight("bias", {filters_}, options_.bias_initializer, /*trainable=*/true,
                                         options_.bias_regularizer, options_.bias_constraint);
}

// x: (N, H, W, C) -> depthwise (N, OH, OW, C * M) -> 1x1 pointwise (N, OH, OW, filters)
Tensor SeparableConv2D::call(const Tensor& x_in, bool /*training*/) {
  const bool first = options_.data_format == "channels_first";
  input_channels(name(), x_in, options_.data_format, depthwise_kernel_.shape().dim(2));
  compute_output_shape(Dims(x_in.dims().begin() + 1, x_in.dims().end()));
  const Tensor x = first ? transpose(x_in, {0, 2, 3, 1}) : x_in;
  Tensor y = conv2d(depthwise(x, depthwise_kernel_, options_), pointwise_kernel_);
  return internal::conv_epilogue(y, options_.use_bias, bias_, options_.activation, first);
}

std::string SeparableConv2D::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["filters"] = filters_;
  put_depthwise_fields(j, kernel_size_, options_, name());
  internal::put_weight_fields(j, "pointwise", options_.pointwise_initializer, options_.pointwise_regularizer,
                              options_.pointwise_constraint);
  return j.dump();
}

// SeparableConv2D's keys: DepthwiseConv2D's and the pointwise ones; tf.keras 2.x also writes
// the base convolution's kernel fields, which a separable convolution does not use.
constexpr internal::ConfigKey kSeparableConv2DKeys[] = {
    {"filters"}, {"pointwise_initializer"}, {"pointwise_regularizer"}, {"pointwise_constraint"},
    {"kernel_initializer"}, {"kernel_regularizer"}, {"kernel_constraint"}};
SeparableConv2D SeparableConv2D::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "SeparableConv2D.from_config");
  internal::expect_layer_keys(j, {kSeparableConv2DKeys, kDepthwiseConv2DKeys}, "SeparableConv2D");
  SeparableConv2DOptions o;
  const Dims kernel_size = get_depthwise_fields(j, o, "SeparableConv2D.from_config");
  internal::get_weight_fields(j, "pointwise", &o.pointwise_initializer, &o.pointwise_regularizer, &o.pointwise_constraint);
  SeparableConv2D l(internal::int_field(j, "filters", "SeparableConv2D"), kernel_size, o);
  l.set_trainable(j.value("trainable", true));
  return l;
}

}  // namespace kiln::keras
