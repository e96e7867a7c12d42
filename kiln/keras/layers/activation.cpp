// Activation layer: a thin wrapper over keras/activations.h.
#include "kiln/keras/layers/activation.h"

#include "kiln/core/check.h"
#include "kiln/keras/activations.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"

namespace kiln::keras {

Activation::Activation(ActivationArg activation, ActivationOptions options)
    : Layer(options.name, options.input_shape, options.dtype), activation_(std::move(activation)) {
  activation_.check();
}

Tensor Activation::call(const Tensor& x, bool /*training*/) { return activation_(x); }

std::string Activation::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["activation"] = activation_.config_name(name());
  return j.dump();
}

constexpr internal::ConfigKey kActivationKeys[] = {{"activation"}};
Activation Activation::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Activation.from_config");
  internal::expect_layer_keys(j, {kActivationKeys}, "Activation");
  if (!j.contains("activation"))
    KILN_THROW(ConfigError, "[", j.value("name", "Activation"), "] config lacks the 'activation' key.");
  const std::string name = internal::activation_from_json(j["activation"]);
  return Activation(name.empty() ? "linear" : name,
                    {.input_shape = internal::input_shape_from(j), .name = j.value("name", "")});
}

}  // namespace kiln::keras
