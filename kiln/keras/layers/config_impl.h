// Internal to keras/: JSON helpers shared by the layers' get_config/from_config (nlohmann
// stays out of public headers).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/keras/initializers/initializers.h"
#include "kiln/keras/layers/layer.h"

namespace kiln::keras::internal {

/// The config every layer shares: name, trainable, dtype, and batch_input_shape if declared.
nlohmann::json base_config(const Layer& layer);
/// Keras {"class_name": "GlorotUniform", "config": {...}} of an initializer, and back.
nlohmann::json initializer_json(const Initializer& init);
Initializer initializer_from_json(const nlohmann::json& j);
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

/// The config fields of layers with a kernel (Dense, Conv2D): activation, use_bias, the two
/// initializers, and the regularizers and constraints Kiln writes as null.
template <typename Options>
void put_kernel_fields(nlohmann::json& j, const Options& o) {
  j["activation"] = o.activation.empty() ? "linear" : o.activation;
  j["use_bias"] = o.use_bias;
  j["kernel_initializer"] = initializer_json(o.kernel_initializer);
  j["bias_initializer"] = initializer_json(o.bias_initializer);
  for (const char* key : {"kernel_regularizer", "bias_regularizer", "activity_regularizer",
                          "kernel_constraint", "bias_constraint"})
    j[key] = nullptr;
}
/// Reads those fields (and input shape and name) back into `o`.
template <typename Options>
void get_kernel_fields(const nlohmann::json& j, Options& o) {
  o.activation = j.value("activation", "linear");
  if (o.activation == "linear") o.activation = "";
  o.use_bias = j.value("use_bias", true);
  if (j.contains("kernel_initializer")) o.kernel_initializer = initializer_from_json(j["kernel_initializer"]);
  if (j.contains("bias_initializer")) o.bias_initializer = initializer_from_json(j["bias_initializer"]);
  o.input_shape = input_shape_from(j);
  o.name = j.value("name", "");
}

}  // namespace kiln::keras::internal
