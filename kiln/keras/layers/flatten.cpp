// Flatten: one reshape keeping the batch dim.
#include "kiln/keras/layers/flatten.h"

#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/conv_utils_impl.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {

Flatten::Flatten(FlattenOptions options)
    : Layer(options.name, options.input_shape, options.dtype), data_format_(std::move(options.data_format)) {
  internal::check_data_format(options.name.empty() ? "Flatten" : options.name, data_format_);
}

Dims Flatten::compute_output_shape(const Dims& input_shape) const {
  int64_t n = 1;
  for (int64_t d : input_shape) n *= d;
  return {n};
}

Tensor Flatten::call(const Tensor& x_in, bool /*training*/) {
  Tensor x = x_in;
  if (data_format_ == "channels_first" && x.rank() >= 3) {  // (N, C, d1, ...) -> (N, d1, ..., C)
    Dims perm = {0};
    for (int i = 2; i < x.rank(); ++i) perm.push_back(i);
    perm.push_back(1);
    x = transpose(x, perm);
  }
  Dims per_example(x.dims().begin() + 1, x.dims().end());
  return reshape(x, {x.dim(0), compute_output_shape(per_example)[0]});
}

std::string Flatten::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["data_format"] = self_as<Flatten>().data_format_;
  return j.dump();
}

constexpr internal::ConfigKey kFlattenKeys[] = {{"data_format"}};
Flatten Flatten::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Flatten.from_config");
  internal::expect_layer_keys(j, {kFlattenKeys}, "Flatten");
  FlattenOptions o{.input_shape = internal::input_shape_from(j), .name = j.value("name", "")};
  if (j.contains("data_format") && j["data_format"].is_string()) o.data_format = j["data_format"];
  Flatten f(o);
  f.set_trainable(j.value("trainable", true));
  return f;
}

}  // namespace kiln::keras
