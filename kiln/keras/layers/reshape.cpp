// Reshape: resolves -1 against the per-example element count and checks it divides.
#include "kiln/keras/layers/reshape.h"

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {

Dims Reshape::compute_output_shape(const Dims& input_shape) const {
  int64_t total = 1, known = 1, unknown_at = -1;
  for (int64_t d : input_shape) total *= d;
  Dims out = target_shape_;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) unknown_at = static_cast<int64_t>(i);
    else known *= out[i];
  }
  if (unknown_at >= 0 && known > 0 && total % known == 0) out[static_cast<size_t>(unknown_at)] = total / known;
  else if (unknown_at >= 0 || known != total)
    KILN_THROW(ShapeError, "[", name(), "] cannot reshape per-example shape ", dims_to_string(input_shape),
               " (", total, " elements) to target_shape=", dims_to_string(target_shape_),
               ". Hint: the target must hold the same number of elements.");
  return out;
}

Tensor Reshape::call(const Tensor& x, bool /*training*/) {
  Dims dims = compute_output_shape(Dims(x.dims().begin() + 1, x.dims().end()));
  dims.insert(dims.begin(), x.dim(0));
  return reshape(x, dims);
}

std::string Reshape::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["target_shape"] = target_shape_;
  return j.dump();
}

constexpr internal::ConfigKey kReshapeKeys[] = {{"target_shape"}};
Reshape Reshape::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Reshape.from_config");
  internal::expect_layer_keys(j, {kReshapeKeys}, "Reshape");
  return Reshape(j.at("target_shape").get<Dims>(),
                 {.input_shape = internal::input_shape_from(j), .name = j.value("name", "")});
}

}  // namespace kiln::keras
