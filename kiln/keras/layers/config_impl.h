// Internal to keras/: JSON helpers shared by the layers' get_config/from_config (nlohmann
// stays out of public headers).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/keras/activations.h"
#include "kiln/keras/initializers/initializers.h"
#include "kiln/keras/layers/layer.h"

namespace kiln::keras::internal {

/// The config every layer shares: name, trainable, dtype, and batch_input_shape if declared.
nlohmann::json base_config(const Layer& layer);
/// A layer's "dtype" as tf.keras 2.4-2.15 writes it (keras.mixed_precision.policy.serialize):
/// the plain name for a single-dtype policy ("float32"), {"class_name": "Policy", "config":
/// {"name": "mixed_bfloat16"}} for a mixed one.
nlohmann::json policy_json(const mixed_precision::Policy& policy);
/// A policy from any form Keras wrote: a name, Keras 2's {"class_name": "Policy", ...}, Keras
/// 3's {"module": "keras", "class_name": "DTypePolicy" | "FloatDTypePolicy", "config": {"name":
/// ...}, "registered_name": null}; null is the global policy. ConfigError naming `layer`.
mixed_precision::Policy policy_from_json(const nlohmann::json& j, const std::string& layer);
/// Keras {"class_name": "GlorotUniform", "config": {...}} of an initializer, and back.
nlohmann::json initializer_json(const Initializer& init);
Initializer initializer_from_json(const nlohmann::json& j);
/// The class name of a serialized Keras object (initializer, regularizer, constraint,
/// activation) in any form Keras wrote: a name, or {"class_name", "config"} with Keras
/// 2.13+'s "module"/"registered_name"; its config goes to `config` (unchanged when none).
/// ConfigError naming `what` for any other shape.
std::string keras_object_class(const nlohmann::json& j, const char* what, nlohmann::json* config);
/// The per-example input shape from "batch_input_shape" ([null, 28, 28] -> {28, 28}).
Dims input_shape_from(const nlohmann::json& config);
/// config[key] as an integer; ConfigError naming `layer` and the field when it is missing or
/// not an integer (`"units": 3.7` is damage, not 3).
int64_t int_field(const nlohmann::json& config, const char* key, const char* layer);
/// Parses `text`, throwing ConfigError naming `where` on malformed JSON.
nlohmann::json parse(const std::string& text, const char* where);
/// Runs `f`, turning a JSON value of the wrong type into a ConfigError naming `where`.
template <typename F>
auto guarded(const char* where, F f) {
  try {
    return f();
  } catch (const nlohmann::json::exception& e) {
    KILN_THROW(ConfigError, "[", where, "] malformed config: ", e.what(), ".");
  }
}

/// A serialized regularizer / constraint / activation (null for none), and back: every form
/// Keras 2.x and 3 wrote (names, {"class_name", "config"}, 2.13+'s module/registered_name).
nlohmann::json regularizer_json(const std::optional<Regularizer>& r);
std::optional<Regularizer> regularizer_from_json(const nlohmann::json& j);
nlohmann::json constraint_json(const std::optional<Constraint>& c);
std::optional<Constraint> constraint_from_json(const nlohmann::json& j);
/// The activation's Keras name ("" for linear) from "relu", {"class_name": "function",
/// "config": "relu", ...} (Keras 2.13+ / 3) or an Activation-layer-like {"class_name":
/// "ReLU"}; ConfigError naming an unknown one.
std::string activation_from_json(const nlohmann::json& j);

/// The "<prefix>_initializer", "_regularizer" and "_constraint" fields of one weight (Keras's
/// depthwise_*, pointwise_*, alpha_*), and back; absent fields leave the outputs as they are.
inline void put_weight_fields(nlohmann::json& j, const std::string& prefix, const Initializer& init,
                              const std::optional<Regularizer>& regularizer, const std::optional<Constraint>& constraint) {
  j[prefix + "_initializer"] = initializer_json(init);
  j[prefix + "_regularizer"] = regularizer_json(regularizer);
  j[prefix + "_constraint"] = constraint_json(constraint);
}
inline void get_weight_fields(const nlohmann::json& j, const std::string& prefix, Initializer* init,
                              std::optional<Regularizer>* regularizer, std::optional<Constraint>* constraint) {
  const std::string i = prefix + "_initializer", r = prefix + "_regularizer", c = prefix + "_constraint";
  if (j.contains(i) && !j[i].is_null()) *init = initializer_from_json(j[i]);
  if (j.contains(r)) *regularizer = regularizer_from_json(j[r]);
  if (j.contains(c)) *constraint = constraint_from_json(j[c]);
}

/// The config fields of layers with a kernel (Dense, Conv2D): activation, use_bias, the two
/// initializers, the regularizers and the constraints.
template <typename Options>
void put_kernel_fields(nlohmann::json& j, const Options& o) {
  j["activation"] = ActivationArg(o.activation).config_name(j.value("name", ""));
  j["use_bias"] = o.use_bias;
  j["kernel_initializer"] = initializer_json(o.kernel_initializer);
  j["bias_initializer"] = initializer_json(o.bias_initializer);
  j["kernel_regularizer"] = regularizer_json(o.kernel_regularizer);
  j["bias_regularizer"] = regularizer_json(o.bias_regularizer);
  j["activity_regularizer"] = regularizer_json(o.activity_regularizer);
  j["kernel_constraint"] = constraint_json(o.kernel_constraint);
  j["bias_constraint"] = constraint_json(o.bias_constraint);
}
/// Reads those fields (and input shape and name) back into `o`.
template <typename Options>
void get_kernel_fields(const nlohmann::json& j, Options& o) {
  o.name = j.value("name", "");
  o.activation = j.contains("activation") ? activation_from_json(j["activation"]) : "";
  o.use_bias = j.value("use_bias", true);
  if (j.contains("kernel_initializer") && !j["kernel_initializer"].is_null())
    o.kernel_initializer = initializer_from_json(j["kernel_initializer"]);
  if (j.contains("bias_initializer") && !j["bias_initializer"].is_null())
    o.bias_initializer = initializer_from_json(j["bias_initializer"]);
  if (j.contains("kernel_regularizer")) o.kernel_regularizer = regularizer_from_json(j["kernel_regularizer"]);
  if (j.contains("bias_regularizer")) o.bias_regularizer = regularizer_from_json(j["bias_regularizer"]);
  if (j.contains("activity_regularizer")) o.activity_regularizer = regularizer_from_json(j["activity_regularizer"]);
  if (j.contains("kernel_constraint")) o.kernel_constraint = constraint_from_json(j["kernel_constraint"]);
  if (j.contains("bias_constraint")) o.bias_constraint = constraint_from_json(j["bias_constraint"]);
  o.input_shape = input_shape_from(j);
}

}  // namespace kiln::keras::internal
