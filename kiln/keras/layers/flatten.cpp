// Flatten: one reshape keeping the batch dim.
#include "kiln/keras/layers/flatten.h"

#include "kiln/keras/layers/config_impl.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {

Dims Flatten::compute_output_shape(const Dims& input_shape) const {
  int64_t n = 1;
  for (int64_t d : input_shape) n *= d;
  return {n};
}

Tensor Flatten::call(const Tensor& x, bool /*training*/) {
  Dims per_example(x.dims().begin() + 1, x.dims().end());
  return reshape(x, {x.dim(0), compute_output_shape(per_example)[0]});
}

std::string Flatten::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["data_format"] = "channels_last";
  return j.dump();
}

Flatten Flatten::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Flatten.from_config");
  Flatten f({.input_shape = internal::input_shape_from(j), .name = j.value("name", "")});
  f.set_trainable(j.value("trainable", true));
  return f;
}

}  // namespace kiln::keras
