// Internal to keras/: JSON helpers shared by the layers' get_config/from_config (nlohmann
// stays out of public headers).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

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
/// Parses `text`, throwing ConfigError naming `where` on malformed JSON.
nlohmann::json parse(const std::string& text, const char* where);

}  // namespace kiln::keras::internal
