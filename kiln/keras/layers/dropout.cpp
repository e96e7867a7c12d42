// Dropout and InputLayer::from_config (the two layers without weights of their own config).
#include "kiln/keras/layers/dropout.h"

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/input_layer.h"
#include "kiln/keras/layers/random_key_impl.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/random.h"

namespace kiln::keras {

Dropout::Dropout(double rate, DropoutOptions options)
    : Layer(options.name, options.input_shape, options.dtype), rate_(rate), options_(std::move(options)) {
  if (rate < 0 || rate >= 1)
    KILN_THROW(ValueError, "[Dropout] expected rate in [0, 1), received rate=", rate, ".");
}

// The mask's dims for an input of `dims` (batch first): noise_shape with kNoneDim entries
// filled in; each entry must be the input's size there or 1 (NumPy broadcasting, as Keras).
Dims Dropout::mask_dims(const Dims& dims) const {
  const Dims& noise = *options_.noise_shape;
  if (noise.size() != dims.size())
    KILN_THROW(ShapeError, "[", name(), "] noise_shape ", dims_to_string(noise), " needs one entry per axis of the ",
               "input ", dims_to_string(dims), " (the batch axis included).");
  Dims out(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    out[i] = noise[i] == kNoneDim ? dims[i] : noise[i];
    if (out[i] != 1 && out[i] != dims[i])
      KILN_THROW(ShapeError, "[", name(), "] noise_shape ", dims_to_string(noise), " does not broadcast to the input ",
                 dims_to_string(dims), ": each entry must be None, 1 or the input's size.");
  }
  return out;
}

void Dropout::build_weights(const Dims& input_shape) {
  if (options_.noise_shape && options_.noise_shape->size() != input_shape.size() + 1)
    KILN_THROW(ShapeError, "[", name(), "] noise_shape ", dims_to_string(*options_.noise_shape), " needs ",
               input_shape.size() + 1, " entries for inputs (batch, ", dims_to_string(input_shape), ").");
  counter_ = internal::make_seed_state(name());
}

Tensor Dropout::call(const Tensor& x, bool training) {
  if (!training || rate_ == 0) return x;
  const Tensor key = internal::next_random_key(counter_, options_.seed, name());
  if (!options_.noise_shape) return dropout(x, rate_, key, /*training=*/true);
  // x * (a mask of 0 or 1 / (1 - rate), broadcast along its 1-sized axes).
  return x * dropout(ones(Shape(x.dtype(), mask_dims(x.dims()))), rate_, key, /*training=*/true);
}

std::string Dropout::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["rate"] = rate_;
  if (options_.noise_shape) {
    j["noise_shape"] = nlohmann::json::array();
    for (int64_t d : *options_.noise_shape) j["noise_shape"].push_back(d == kNoneDim ? nlohmann::json() : nlohmann::json(d));
  } else {
    j["noise_shape"] = nullptr;
  }
  j["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json(nullptr);
  return j.dump();
}

// Keras 2.0.9+ writes noise_shape (null unless set; a list with nulls) and seed.
constexpr internal::ConfigKey kDropoutKeys[] = {{"rate"}, {"noise_shape"}, {"seed"}};
Dropout Dropout::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Dropout.from_config");
  internal::expect_layer_keys(j, {kDropoutKeys}, "Dropout");
  DropoutOptions o{.input_shape = internal::input_shape_from(j), .name = j.value("name", "")};
  if (j.contains("seed") && !j["seed"].is_null()) o.seed = j["seed"].get<uint64_t>();
  if (j.contains("noise_shape") && !j["noise_shape"].is_null()) {
    const nlohmann::json& n = j["noise_shape"];
    if (!n.is_array() || n.empty())
      KILN_THROW(ConfigError, "[Dropout.from_config] noise_shape must be null or a list, received ", n.dump(), ".");
    Dims noise;
    for (const nlohmann::json& d : n) {
      if (!d.is_null() && !(d.is_number_integer() && d.get<int64_t>() >= 1))
        KILN_THROW(ConfigError, "[Dropout.from_config] noise_shape entries must be null or positive integers, ",
                   "received ", n.dump(), ".");
      noise.push_back(d.is_null() ? kNoneDim : d.get<int64_t>());
    }
    o.noise_shape = std::move(noise);
  }
  return Dropout(j.at("rate").get<double>(), o);
}

// InputLayer's keys: Keras 2's batch_input_shape (a base key), Keras 3's batch_shape, and the
// input kinds Kiln does not build (sparse, ragged, a type_spec, optional inputs) at their defaults.
constexpr internal::ConfigKey kInputLayerKeys[] = {
    {"batch_shape"},
    {"sparse", "false", "Kiln's inputs are dense tensors"},
    {"ragged", "false", "Kiln's inputs are dense tensors"},
    {"type_spec", "null", "Kiln's inputs are dense tensors"},
    {"optional", "false", "Kiln's model inputs are all required"}};
InputLayer InputLayer::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "InputLayer.from_config");
  internal::expect_layer_keys(j, {kInputLayerKeys}, "InputLayer");
  return InputLayer({.shape = internal::input_shape_from(j), .name = j.value("name", "")});
}

}  // namespace kiln::keras
