// GlobalAveragePooling2D: one mean over axes (1, 2).
#include "kiln/keras/layers/global_average_pooling2d.h"

#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/conv_utils_impl.h"
#include "kiln/trace/ops/reduce.h"

namespace kiln::keras {

GlobalAveragePooling2D::GlobalAveragePooling2D(GlobalAveragePooling2DOptions options)
    : Layer(options.name, options.input_shape, options.dtype), options_(std::move(options)) {
  internal::check_data_format(options_.name.empty() ? "GlobalAveragePooling2D" : options_.name,
                              options_.data_format);
}

Dims GlobalAveragePooling2D::compute_output_shape(const Dims& input_shape) const {
  internal::check_image_input(where(), input_shape);
  if (options_.data_format == "channels_first")
    return options_.keepdims ? Dims{input_shape[0], 1, 1} : Dims{input_shape[0]};
  return options_.keepdims ? Dims{1, 1, input_shape[2]} : Dims{input_shape[2]};
}

// x: (N, H, W, C) -> (N, C) or (N, 1, 1, C); channels_first (N, C, H, W) -> (N, C) or (N, C, 1, 1)
Tensor GlobalAveragePooling2D::call(const Tensor& x, bool /*training*/) {
  compute_output_shape(Dims(x.dims().begin() + 1, x.dims().end()));
  if (options_.data_format == "channels_first") return mean(x, {2, 3}, options_.keepdims);
  return mean(x, {1, 2}, options_.keepdims);
}

std::string GlobalAveragePooling2D::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["data_format"] = options_.data_format;
  j["keepdims"] = options_.keepdims;
  return j.dump();
}

constexpr internal::ConfigKey kGlobalAveragePooling2DKeys[] = {{"data_format"}, {"keepdims"}};
GlobalAveragePooling2D GlobalAveragePooling2D::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "GlobalAveragePooling2D.from_config");
  internal::expect_layer_keys(j, {kGlobalAveragePooling2DKeys}, "GlobalAveragePooling2D");
  GlobalAveragePooling2DOptions o;
  if (j.contains("data_format") && !j["data_format"].is_null()) o.data_format = j["data_format"];
  o.keepdims = j.value("keepdims", false);
  o.input_shape = internal::input_shape_from(j);
  o.name = j.value("name", "");
  GlobalAveragePooling2D g(o);
  g.set_trainable(j.value("trainable", true));
  return g;
}

}  // namespace kiln::keras
