// Rescaling: one multiply-add over the input, traced into the step like any elementwise op.
#include "kiln/keras/layers/rescaling.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/trace/ops/elementwise.h"

namespace kiln::keras {
namespace {

nlohmann::json numbers_json(const std::vector<double>& v) {
  return v.size() == 1 ? nlohmann::json(v[0]) : nlohmann::json(v);
}

// A config's scale or offset: a number, or a flat list of numbers (Keras 3 writes a list as
// it was given).
std::vector<double> numbers_from(const nlohmann::json& v, const char* key) {
  if (v.is_number()) return {v.get<double>()};
  if (v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const nlohmann::json& e) { return e.is_number(); }))
    return v.get<std::vector<double>>();
  KILN_THROW(ConfigError, "[Rescaling.from_config] ", key, " must be a number or a flat list of numbers (one per "
             "channel), received ", key, "=", v.dump(), ".");
}

}  // namespace

Rescaling::Rescaling(double scale, double offset, LayerOptions options)
    : Rescaling(std::vector<double>{scale}, std::vector<double>{offset}, std::move(options)) {}

Rescaling::Rescaling(std::vector<double> scale, std::vector<double> offset, LayerOptions options)
    : Layer(options.name, options.input_shape, options.dtype), scale_(std::move(scale)), offset_(std::move(offset)) {
  const std::string at = options.name.empty() ? "Rescaling" : options.name;
  if (scale_.empty() || offset_.empty())
    KILN_THROW(ValueError, "[", at, "] scale and offset need at least one value each.");
  for (const std::vector<double>* v : {&scale_, &offset_})
    for (double e : *v)
      if (!std::isfinite(e))
        KILN_THROW(ValueError, "[", at, "] scale and offset must be finite, received scale=", numbers_json(scale_).dump(),
                   ", offset=", numbers_json(offset_).dump(), ".");
}

Dims Rescaling::compute_output_shape(const Dims& input_shape) const {
  for (const std::vector<double>* v : {&scale_, &offset_})
    if (v->size() > 1 && (input_shape.empty() || input_shape.back() != static_cast<int64_t>(v->size())))
      KILN_THROW(ShapeError, "[", name(), "] ", v->size(), " per-channel values need an input whose last axis has ",
                 v->size(), " channels, received ", dims_to_string(input_shape), ".");
  return input_shape;
}

Tensor Rescaling::call(const Tensor& x, bool /*training*/) {
  // Autocast converts floating inputs only; u8 pixels are cast here, as Keras casts any input.
  const Tensor y = x.dtype() == compute_dtype() ? x : cast(x, compute_dtype());
  compute_output_shape(Dims(y.dims().begin() + 1, y.dims().end()));
  // One number stays a scalar operand; a list is a (channels,) constant broadcast over the
  // last axis.
  auto operand = [&](const std::vector<double>& v) {
    if (v.size() == 1) return Tensor();
    std::vector<float> f(v.begin(), v.end());
    return cast(constant(HostTensor::from_vector<float>({static_cast<int64_t>(f.size())}, f)), compute_dtype());
  };
  const Tensor scale = operand(scale_), offset = operand(offset_);
  const Tensor scaled = scale.defined() ? y * scale : y * scale_[0];
  if (offset.defined()) return scaled + offset;
  return offset_[0] == 0.0 ? scaled : scaled + offset_[0];
}

std::string Rescaling::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["scale"] = numbers_json(scale_);
  j["offset"] = numbers_json(offset_);
  return j.dump();
}

constexpr internal::ConfigKey kRescalingKeys[] = {{"scale"}, {"offset"}};
Rescaling Rescaling::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Rescaling.from_config");
  internal::expect_layer_keys(j, {kRescalingKeys}, "Rescaling");
  auto [scale, offset] = internal::guarded("Rescaling.from_config", [&] {
    return std::pair{numbers_from(j.at("scale"), "scale"),
                     j.contains("offset") ? numbers_from(j["offset"], "offset") : std::vector<double>{0.0}};
  });
  Rescaling l(std::move(scale), std::move(offset), {.input_shape = internal::input_shape_from(j), .name = j.value("name", "")});
  l.set_trainable(j.value("trainable", true));
  return l;
}

}  // namespace kiln::keras
