// Dropout and InputLayer::from_config (the two layers without weights of their own config).
#include "kiln/keras/layers/dropout.h"

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/input_layer.h"
#include "kiln/keras/layers/random_key_impl.h"
#include "kiln/trace/ops/random.h"

namespace kiln::keras {

Dropout::Dropout(double rate, DropoutOptions options)
    : Layer(options.name, options.input_shape, options.dtype), rate_(rate), options_(std::move(options)) {
  if (rate < 0 || rate >= 1)
    KILN_THROW(ValueError, "[Dropout] expected rate in [0, 1), received rate=", rate, ".");
}

void Dropout::build_weights(const Dims& /*input_shape*/) { counter_ = internal::make_seed_state(name()); }

Tensor Dropout::call(const Tensor& x, bool training) {
  if (!training || rate_ == 0) return x;
  return dropout(x, rate_, internal::next_random_key(counter_, options_.seed, name()), /*training=*/true);
}

std::string Dropout::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["rate"] = rate_;
  j["noise_shape"] = nullptr;
  j["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json(nullptr);
  return j.dump();
}

// Keras 2.0.9+ writes noise_shape (null unless set) and seed.
constexpr internal::ConfigKey kDropoutKeys[] = {
    {"rate"}, {"noise_shape", "null", "Kiln's Dropout draws a mask per element; noise_shape is not built"}, {"seed"}};
Dropout Dropout::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Dropout.from_config");
  internal::expect_layer_keys(j, {kDropoutKeys}, "Dropout");
  DropoutOptions o{.input_shape = internal::input_shape_from(j), .name = j.value("name", "")};
  if (j.contains("seed") && !j["seed"].is_null()) o.seed = j["seed"].get<uint64_t>();
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
