// Rescaling: one multiply-add over the input, traced into the step like any elementwise op.
#include "kiln/keras/layers/rescaling.h"

#include <cmath>
#include <utility>

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/trace/ops/elementwise.h"

namespace kiln::keras {

Rescaling::Rescaling(double scale, double offset, LayerOptions options)
    : Layer(options.name, options.input_shape, options.dtype), scale_(scale), offset_(offset) {
  if (!std::isfinite(scale) || !std::isfinite(offset))
    KILN_THROW(ValueError, "[", options.name.empty() ? "Rescaling" : options.name, "] scale and offset must be finite, received scale=",
               scale, ", offset=", offset, ".");
}

Tensor Rescaling::call(const Tensor& x, bool /*training*/) {
  // Autocast converts floating inputs only; u8 pixels are cast here, as Keras casts any input.
  const Tensor y = x.dtype() == compute_dtype() ? x : cast(x, compute_dtype());
  if (offset_ == 0.0) return y * scale_;
  return y * scale_ + offset_;
}

std::string Rescaling::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["scale"] = scale_;
  j["offset"] = offset_;
  return j.dump();
}

constexpr internal::ConfigKey kRescalingKeys[] = {{"scale"}, {"offset"}};
Rescaling Rescaling::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Rescaling.from_config");
  internal::expect_layer_keys(j, {kRescalingKeys}, "Rescaling");
  const auto [scale, offset] = internal::guarded("Rescaling.from_config", [&] {
    if (!j.at("scale").is_number())
      KILN_THROW(ConfigError, "[Rescaling.from_config] Kiln takes one scale for every channel, received scale=",
                 j.at("scale").dump(), ".");
    return std::pair{j.at("scale").get<double>(), j.value("offset", 0.0)};
  });
  Rescaling l(scale, offset, {.input_shape = internal::input_shape_from(j), .name = j.value("name", "")});
  l.set_trainable(j.value("trainable", true));
  return l;
}

}  // namespace kiln::keras
