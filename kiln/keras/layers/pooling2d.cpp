// Pooling2D: argument checks, output shape, one reduce_window (max or mean) and the config.
#include "kiln/keras/layers/pooling2d.h"

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/conv_utils_impl.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {

Pooling2D::Pooling2D(const char* class_name, bool is_max, Pooling2DOptions options)
    : Layer(options.name, options.input_shape, options.dtype), is_max_(is_max), options_(std::move(options)) {
  const std::string at = options_.name.empty() ? class_name : options_.name;
  internal::check_pair(at, "pool_size", options_.pool_size);
  if (options_.strides.empty()) options_.strides = options_.pool_size;
  internal::check_pair(at, "strides", options_.strides);
  internal::check_padding(at, options_.padding);
  internal::check_data_format(at, options_.data_format);
}

std::string Pooling2D::where() const { return name().empty() ? class_name() : name(); }

Dims Pooling2D::compute_output_shape(const Dims& input_shape) const {
  const bool first = options_.data_format == "channels_first";
  const Dims hwc = first ? internal::to_channels_last(input_shape) : input_shape;
  Dims out = internal::spatial_output(where(), hwc, options_.pool_size, options_.padding, options_.strides, {1, 1});
  out.push_back(hwc[2]);
  return first ? internal::to_channels_first(out) : out;
}

// x: (N, H, W, C) -> (N, OH, OW, C); channels_first transposes to NHWC and back.
Tensor Pooling2D::call(const Tensor& x_in, bool /*training*/) {
  const bool first = options_.data_format == "channels_first";
  compute_output_shape(Dims(x_in.dims().begin() + 1, x_in.dims().end()));
  const Tensor x = first ? transpose(x_in, {0, 2, 3, 1}) : x_in;
  const Pool2DOptions o{.pool_size = options_.pool_size, .strides = options_.strides, .padding = options_.padding};
  Tensor y = is_max_ ? max_pool2d(x, o) : avg_pool2d(x, o);
  return first ? transpose(y, {0, 3, 1, 2}) : y;
}

std::string Pooling2D::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["pool_size"] = options_.pool_size;
  j["padding"] = options_.padding;
  j["strides"] = options_.strides;
  j["data_format"] = options_.data_format;
  return j.dump();
}

// MaxPooling2D's and AveragePooling2D's keys.
constexpr internal::ConfigKey kPooling2DKeys[] = {{"pool_size"}, {"strides"}, {"padding"}, {"data_format"}};
Pooling2DOptions Pooling2D::options_from_config(const std::string& config_json, const char* where,
                                                bool* trainable) {
  nlohmann::json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kPooling2DKeys}, where);
  Pooling2DOptions o;
  if (j.contains("pool_size")) o.pool_size = internal::pair_from_json(j["pool_size"]);
  if (j.contains("strides") && !j["strides"].is_null()) o.strides = internal::pair_from_json(j["strides"]);
  o.padding = j.value("padding", o.padding);
  if (j.contains("data_format") && !j["data_format"].is_null()) o.data_format = j["data_format"];
  o.input_shape = internal::input_shape_from(j);
  o.name = j.value("name", "");
  *trainable = j.value("trainable", true);
  return o;
}

MaxPooling2D MaxPooling2D::from_config(const std::string& config_json) {
  bool trainable = true;
  MaxPooling2D p(options_from_config(config_json, "MaxPooling2D.from_config", &trainable));
  p.set_trainable(trainable);
  return p;
}

AveragePooling2D AveragePooling2D::from_config(const std::string& config_json) {
  bool trainable = true;
  AveragePooling2D p(options_from_config(config_json, "AveragePooling2D.from_config", &trainable));
  p.set_trainable(trainable);
  return p;
}

}  // namespace kiln::keras
