// 1-D pooling as 2-D pooling over (steps, 1), and global pooling as one reduce_max or mean
// (a masked mean as a sum over a sum).
#include "kiln/keras/layers/pooling1d.h"

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/conv_utils_impl.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {

Pooling1D::Pooling1D(const char* class_name, bool is_max, int64_t pool_size, Pooling1DOptions options)
    : Layer(options.name, options.input_shape, options.dtype), is_max_(is_max), pool_size_(pool_size),
      options_(std::move(options)) {
  const std::string at = options_.name.empty() ? class_name : options_.name;
  if (options_.strides == 0) options_.strides = pool_size_;
  if (pool_size_ <= 0 || options_.strides <= 0)
    KILN_THROW(ValueError, "[", at, "] expected pool_size and strides > 0, received pool_size=", pool_size_,
               ", strides=", options_.strides, ".");
  internal::check_padding(at, options_.padding);
  internal::check_data_format(at, options_.data_format);
}

Dims Pooling1D::compute_output_shape(const Dims& input_shape) const {
  if (input_shape.size() != 2)
    KILN_THROW(ShapeError, "[", where(), "] expected input (batch, steps, features), received per-example shape ",
               dims_to_string(input_shape), ".");
  const bool first = options_.data_format == "channels_first";
  const int64_t steps = input_shape[first ? 1 : 0], features = input_shape[first ? 0 : 1];
  // The 2-D rule over (steps, 1) with a (pool, 1) window: its errors name the layer.
  const Dims out = internal::spatial_output(where(), {steps, 1, features}, {pool_size_, 1}, options_.padding,
                                            {options_.strides, 1}, {1, 1});
  return first ? Dims{features, out[0]} : Dims{out[0], features};
}

// x: (N, L, C) -> (N, L, 1, C) -> pool (p, 1) -> (N, OL, C); channels_first transposes.
Tensor Pooling1D::call(const Tensor& x_in, bool /*training*/) {
  compute_output_shape(Dims(x_in.dims().begin() + 1, x_in.dims().end()));
  const bool first = options_.data_format == "channels_first";
  const Tensor x = first ? transpose(x_in, {0, 2, 1}) : x_in;
  const Pool2DOptions o{.pool_size = {pool_size_, 1}, .strides = {options_.strides, 1}, .padding = options_.padding};
  const Tensor x4 = reshape(x, {x.dim(0), x.dim(1), 1, x.dim(2)});
  Tensor y = is_max_ ? max_pool2d(x4, o) : avg_pool2d(x4, o);
  y = reshape(y, {y.dim(0), y.dim(1), y.dim(3)});
  return first ? transpose(y, {0, 2, 1}) : y;
}

std::string Pooling1D::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["pool_size"] = Dims{pool_size_};
  j["padding"] = options_.padding;
  j["strides"] = Dims{options_.strides};
  j["data_format"] = options_.data_format;
  return j.dump();
}

// MaxPooling1D's and AveragePooling1D's keys (data_format: Keras 2.2.3+).
constexpr internal::ConfigKey kPooling1DKeys[] = {{"pool_size"}, {"strides"}, {"padding"}, {"data_format"}};
Pooling1DOptions Pooling1D::options_from_config(const std::string& config_json, const char* where, int64_t* pool_size,
                                                bool* trainable) {
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kPooling1DKeys}, where);
  Pooling1DOptions o;
  *pool_size = j.contains("pool_size") ? internal::single_from_json(j["pool_size"], "pool_size", where) : 2;
  if (j.contains("strides") && !j["strides"].is_null()) o.strides = internal::single_from_json(j["strides"], "strides", where);
  o.padding = j.value("padding", o.padding);
  if (j.contains("data_format") && !j["data_format"].is_null()) o.data_format = j["data_format"];
  o.input_shape = internal::input_shape_from(j);
  o.name = j.value("name", "");
  *trainable = j.value("trainable", true);
  return o;
}

template <typename L>
L Pooling1D::from_config_as(const std::string& config_json, const char* where) {
  int64_t pool = 2;
  bool trainable = true;
  Pooling1DOptions o = options_from_config(config_json, where, &pool, &trainable);
  L p(pool, o);
  p.set_trainable(trainable);
  return p;
}

MaxPooling1D MaxPooling1D::from_config(const std::string& config_json) {
  return from_config_as<MaxPooling1D>(config_json, "MaxPooling1D.from_config");
}

AveragePooling1D AveragePooling1D::from_config(const std::string& config_json) {
  return from_config_as<AveragePooling1D>(config_json, "AveragePooling1D.from_config");
}

// ---- global pooling --------------------------------------------------------------------------

GlobalPooling::GlobalPooling(const char* class_name, size_t rank, bool is_max, GlobalPoolingOptions options)
    : Layer(options.name, options.input_shape, options.dtype), rank_(rank), is_max_(is_max), options_(std::move(options)) {
  internal::check_data_format(options_.name.empty() ? class_name : options_.name, options_.data_format);
}

Dims GlobalPooling::compute_output_shape(const Dims& input_shape) const {
  const std::string at = name().empty() ? class_name() : name();
  if (input_shape.size() != rank_ + 1)
    KILN_THROW(ShapeError, "[", at, "] expected input ", rank_ == 1 ? "(batch, steps, features)" : "(batch, rows, cols, channels)",
               ", received per-example shape ", dims_to_string(input_shape), ".");
  const bool first = options_.data_format == "channels_first";
  const int64_t channels = first ? input_shape.front() : input_shape.back();
  if (!options_.keepdims) return {channels};
  Dims out(rank_ + 1, 1);
  out[first ? 0 : rank_] = channels;
  return out;
}

std::vector<int> GlobalPooling::spatial_axes() const {
  std::vector<int> axes;
  const int start = options_.data_format == "channels_first" ? 2 : 1;
  for (size_t i = 0; i < rank_; ++i) axes.push_back(start + static_cast<int>(i));
  return axes;
}

// x: (N, *spatial, C) -> (N, C) (or keepdims); channels_first reduces the axes after C.
Tensor GlobalPooling::call(const Tensor& x, bool /*training*/) {
  compute_output_shape(Dims(x.dims().begin() + 1, x.dims().end()));
  return is_max_ ? reduce_max(x, spatial_axes(), options_.keepdims) : mean(x, spatial_axes(), options_.keepdims);
}

std::string GlobalPooling::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["data_format"] = options_.data_format;
  j["keepdims"] = options_.keepdims;
  return j.dump();
}

// The global poolings' keys (keepdims: tf.keras 2.6+ and Keras 3).
constexpr internal::ConfigKey kGlobalPoolingKeys[] = {{"data_format"}, {"keepdims"}};
GlobalPoolingOptions GlobalPooling::options_from_config(const std::string& config_json, const char* where,
                                                        bool* trainable) {
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kGlobalPoolingKeys}, where);
  GlobalPoolingOptions o;
  if (j.contains("data_format") && !j["data_format"].is_null()) o.data_format = j["data_format"];
  o.keepdims = j.value("keepdims", false);
  o.input_shape = internal::input_shape_from(j);
  o.name = j.value("name", "");
  *trainable = j.value("trainable", true);
  return o;
}

template <typename L>
L GlobalPooling::from_config_as(const std::string& config_json, const char* where) {
  bool trainable = true;
  L p(options_from_config(config_json, where, &trainable));
  p.set_trainable(trainable);
  return p;
}

GlobalMaxPooling1D GlobalMaxPooling1D::from_config(const std::string& config_json) {
  return from_config_as<GlobalMaxPooling1D>(config_json, "GlobalMaxPooling1D.from_config");
}

GlobalMaxPooling2D GlobalMaxPooling2D::from_config(const std::string& config_json) {
  return from_config_as<GlobalMaxPooling2D>(config_json, "GlobalMaxPooling2D.from_config");
}

GlobalAveragePooling1D GlobalAveragePooling1D::from_config(const std::string& config_json) {
  return from_config_as<GlobalAveragePooling1D>(config_json, "GlobalAveragePooling1D.from_config");
}

// Keras's masked mean: the (N, steps) mask as 0/1 in x's dtype, broadcast over the features
// (axis 2, or 1 for channels_first), weighs the sum and counts the steps.
Tensor GlobalAveragePooling1D::call_masked(const Tensor& x, const Tensor& mask, bool /*training*/) {
  compute_output_shape(Dims(x.dims().begin() + 1, x.dims().end()));
  const bool first = options().data_format == "channels_first";
  const Tensor weight = expand_dims(cast(mask, x.dtype()), first ? 1 : 2);
  const std::vector<int> steps = spatial_axes();
  return reduce_sum(x * weight, steps, options().keepdims) / reduce_sum(weight, steps, options().keepdims);
}

}  // namespace kiln::keras
