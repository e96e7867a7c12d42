// model_config JSON -> Model, for every form Keras 2.0-2.15 wrote: Keras <= 2.2.2's Sequential
// whose "config" is a bare list of layers, build_input_shape (2.2.3+), InputLayer or
// batch_input_shape on the first layer, Functional/Model graphs, dtype policies as objects.
// A layer that fails to build is named, with the Keras version that wrote the file.
#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/models/functional.h"
#include "kiln/keras/models/model_layer.h"
#include "kiln/keras/models/sequential.h"
#include "kiln/keras/saving/saving.h"
#include "kiln/keras/saving/saving_impl.h"

namespace kiln::keras::internal {
namespace {

using nlohmann::json;

// "[m.h5] (written by Keras 2.2.4)": where a config came from, for messages.
std::string where(const ConfigSource& source) {
  std::string out = source.path.empty() ? "[model_from_json]" : "[" + source.path + "]";
  if (!source.keras_version.empty()) out += " (written by Keras " + source.keras_version + ")";
  return out;
}

// "[path] (written by Keras V) model_config: what", or "... model_config is ..." when `what`
// begins with "is ".
[[noreturn]] void fail(const ConfigSource& source, const std::string& what) {
  const std::string message = str_cat(where(source), " model_config", what.rfind("is ", 0) == 0 ? " " : ": ", what);
  if (source.path.empty()) throw ConfigError(message);
  throw IOError(message);
}

bool is_model_class(const std::string& cls) { return cls == "Sequential" || cls == "Functional" || cls == "Model"; }

// The keys of a model_config, by level, in every Keras release. The top: a serialized object,
// plus the keras_version and backend that Model.to_json() adds.
constexpr ConfigKey kTopKeys[] = {{"keras_version"}, {"backend"}};
constexpr std::string_view kModelTrainable = "set trainable on the layers instead";

// expect_only_keys with the error named as model_config errors are.
void check_keys(const json& j, const std::vector<ConfigKeys>& tables, const std::string& what,
                const ConfigSource& source) {
  try {
    expect_only_keys(j, tables, what, "model_config");
  } catch (const ConfigError& e) {
    fail(source, e.what());
  }
}

json normalize_model_config(const std::string& cls, json config, const ConfigSource& source, bool nested);

// The boolean options of Keras's layer configs. Some writers (older Keras, converters, hand
// edits) store them as 0 or 1 ("scale": 1 in a BatchNormalization), which Python's
// truthiness and so Keras's from_config accept: they are read as false and true.
constexpr std::string_view kBoolKeys[] = {
    "trainable", "use_bias", "center", "scale", "return_sequences", "return_state", "go_backwards", "stateful",
    "unroll", "time_major", "reset_after", "unit_forget_bias", "mask_zero", "keepdims", "sparse", "ragged",
    "renorm", "normalize", "use_causal_mask", "zero_output_for_mask", "use_scale", "causal", "synchronized"};

void coerce_bools(json& config) {
  for (auto it = config.begin(); it != config.end(); ++it) {
    const std::string& key = it.key();
    json& value = it.value();
    if (value.is_object()) {
      // Wrapped layers (Bidirectional's and TimeDistributed's "layer") carry their own options.
      if (value.contains("class_name") && value.contains("config") && value["config"].is_object())
        coerce_bools(value["config"]);
      continue;
    }
    const bool listed = std::find(std::begin(kBoolKeys), std::end(kBoolKeys), key) != std::end(kBoolKeys);
    if (listed && value.is_number_integer() && (value.get<int64_t>() == 0 || value.get<int64_t>() == 1))
      value = value.get<int64_t>() == 1;
  }
}

void normalize_layer(json& entry, size_t index, bool functional, const ConfigSource& source) {
  if (!entry.is_object() || !entry.contains("class_name") || !entry["class_name"].is_string())
    fail(source, str_cat("layer #", index, " is not {\"class_name\": ..., \"config\": {...}}: ",
                         entry.dump().substr(0, 200), ". Hint: the file is damaged or not a Keras model."));
  const std::string cls = entry["class_name"].get<std::string>();
  const std::string what = str_cat("layer #", index, " entry");
  if (functional) check_keys(entry, {functional_layer_entry_keys(), serialized_object_keys()}, what, source);
  else check_keys(entry, {serialized_object_keys()}, what, source);
  if (!entry.contains("config") || entry["config"].is_null()) entry["config"] = json::object();
  json& config = entry["config"];
  if (!config.is_object())
    fail(source, str_cat("layer #", index, " (", cls, ") has config ", config.dump().substr(0, 200),
                         "; expected an object."));
  if (is_model_class(cls)) {  // a nested model: its config is a model's, read as the top one is
    config = normalize_model_config(cls, config, source, /*nested=*/true);
    return;
  }
  coerce_bools(config);
  // "dtype" stays as written (a name, Keras 2's Policy object or Keras 3's DTypePolicy):
  // layer_from_config reads every form into the layer's policy.
  // Keras 3's InputLayer says batch_shape where Keras 2 said batch_input_shape.
  if (cls == "InputLayer" && config.contains("batch_shape") && !config.contains("batch_input_shape"))
    config["batch_input_shape"] = config["batch_shape"];
}

json normalize_model_config(const std::string& cls, json config, const ConfigSource& source, bool nested) {
  if (cls == "Sequential" && config.is_array())  // Keras <= 2.2.2: the layer list itself
    config = {{"name", "sequential"}, {"layers", config}};
  if (!config.is_object() || !config.contains("layers") || !config["layers"].is_array())
    fail(source, str_cat("the ", cls, " config has no \"layers\" list: ", config.dump().substr(0, 200),
                         ". Hint: the file is damaged or not a Keras model."));
  const bool functional = cls != "Sequential";
  // A nested model may be frozen (transfer learning's base.trainable = False), which its
  // ModelLayer honors; and Kiln's own Sequential writes the outer input on it as on any
  // first layer (batch_input_shape), which is the nested Sequential's build_input_shape.
  std::optional<bool> frozen;
  if (nested && config.contains("trainable") && config["trainable"].is_boolean() && !config["trainable"].get<bool>()) {
    frozen = true;
    config.erase("trainable");
  }
  if (nested && config.contains("batch_input_shape")) {
    if (!functional && !config.contains("build_input_shape")) config["build_input_shape"] = config["batch_input_shape"];
    config.erase("batch_input_shape");
  }
  check_keys(config, {functional ? functional_config_keys() : sequential_config_keys()},
             nested ? str_cat(cls, " '", config.value("name", ""), "'") : cls, source);
  json& layers = config["layers"];
  for (size_t i = 0; i < layers.size(); ++i) normalize_layer(layers[i], i, functional, source);
  // Keras 2.2.3+ records a Sequential built by build(shape) as build_input_shape; Kiln builds
  // from the first layer's batch_input_shape, as Keras 2's older files declare it.
  if (cls == "Sequential" && config.contains("build_input_shape") && config["build_input_shape"].is_array() &&
      !layers.empty() && layers[0]["class_name"] != "InputLayer" &&
      !layers[0]["config"].contains("batch_input_shape"))
    layers[0]["config"]["batch_input_shape"] = config["build_input_shape"];
  if (frozen) config["trainable"] = false;
  return config;
}

json normalize(json j, const ConfigSource& source) {
  if (!j.is_object() || !j.contains("class_name") || !j["class_name"].is_string())
    fail(source, str_cat("expected {\"class_name\": \"Sequential\" | \"Functional\" | \"Model\", \"config\": ...}, "
                         "received ", j.dump().substr(0, 200), "."));
  const std::string cls = j["class_name"].get<std::string>();
  if (!is_model_class(cls))
    fail(source, str_cat("describes a '", cls, "' model; Kiln loads Sequential, Functional and Model. Hint: rebuild "
                         "the model in C++ and use load_weights."));
  check_keys(j, {kTopKeys, serialized_object_keys()}, "the model entry", source);
  j["config"] = normalize_model_config(cls, j.contains("config") ? j["config"] : json(), source, /*nested=*/false);
  return j;
}

// A nested model (normalized by normalize_model_config) as a layer of its outer model.
LayerHandle nested_model(const std::string& cls, json config, const LayerFromConfig& make_layer) {
  const bool frozen = config.contains("trainable") && !config["trainable"].get<bool>();
  config.erase("trainable");
  // The outer Sequential's build_input_shape lands here as the first layer's input.
  if (config.contains("batch_input_shape")) {
    json& layers = config["layers"];
    if (cls == "Sequential" && !layers.empty() && layers[0]["class_name"] != "InputLayer" &&
        !layers[0]["config"].contains("batch_input_shape"))
      layers[0]["config"]["batch_input_shape"] = config["batch_input_shape"];
    config.erase("batch_input_shape");
  }
  const json entry = {{"class_name", cls}, {"config", config}};
  std::shared_ptr<Model> model;
  if (cls == "Sequential") model = Sequential::from_json(entry.dump(), make_layer);
  else model = Functional::from_json(entry.dump(), make_layer);
  auto layer = std::make_shared<ModelLayer>(std::move(model));
  if (frozen) layer->set_trainable(false);
  return LayerHandle(std::shared_ptr<Layer>(std::move(layer)));
}

}  // namespace

ConfigKeys sequential_config_keys() {
  // Keras 3's trainable and dtype are Model.get_config's: the model's own trainable flag
  // (Kiln's models take it from their layers) and policy (which no layer inherits on load).
  static constexpr ConfigKey kKeys[] = {
      {"name"}, {"layers"}, {"build_input_shape"}, {"trainable", "true", kModelTrainable}, {"dtype"}};
  return kKeys;
}

ConfigKeys functional_config_keys() {
  // tf.keras 2.12+ and Keras 3 add trainable.
  static constexpr ConfigKey kKeys[] = {
      {"name"}, {"layers"}, {"input_layers"}, {"output_layers"}, {"trainable", "true", kModelTrainable}};
  return kKeys;
}

ConfigKeys functional_layer_entry_keys() {
  static constexpr ConfigKey kKeys[] = {{"name"}, {"inbound_nodes"}};
  return kKeys;
}

std::unique_ptr<Model> model_from_config(const std::string& config_json, const ConfigSource& source) {
  json j = json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    fail(source, str_cat("is malformed: not valid JSON (it begins ", json(config_json.substr(0, 60)).dump(),
                         "). Hint: the file is damaged or truncated."));
  j = normalize(std::move(j), source);
  const CustomObjects* custom = source.custom_objects;
  LayerFromConfig make_layer;
  make_layer = [custom, &make_layer](const std::string& cls, const std::string& config) -> LayerHandle {
    const json c = json::parse(config, nullptr, /*allow_exceptions=*/false);
    const std::string name = c.is_object() ? c.value("name", "") : "";
    try {
      if (custom != nullptr)
        if (auto it = custom->find(cls); it != custom->end()) return it->second(config);
      if (is_model_class(cls)) return nested_model(cls, c, make_layer);
      return layer_from_config(cls, config);
    } catch (const json::exception& e) {  // a factory that reads JSON itself
      KILN_THROW(ConfigError, "layer '", name, "' (", cls, "): malformed config (", e.what(), ").");
    } catch (const Error& e) {
      KILN_THROW(ConfigError, "layer '", name, "' (", cls, "): ", e.what(),
                 !is_model_class(cls) && std::string(e.what()).find("unknown layer class") != std::string::npos
                     ? " Or pass LoadOptions{.custom_objects = {{\"" + cls + "\", factory}}} to build it yourself."
                     : "");
    }
  };
  try {
    if (j["class_name"] == "Sequential") return Sequential::from_json(j.dump(), make_layer);
    return Functional::from_json(j.dump(), make_layer);
  } catch (const json::exception& e) {
    fail(source, str_cat("malformed config (", e.what(), ")."));
  } catch (const Error& e) {
    fail(source, e.what());
  }
}

std::unique_ptr<Model> model_from_config(const std::string& config_json, const std::string& path) {
  return model_from_config(config_json, ConfigSource{.path = path});
}

}  // namespace kiln::keras::internal

namespace kiln::keras {

std::unique_ptr<Model> model_from_json(const std::string& json, const CustomObjects& custom_objects) {
  return internal::model_from_config(json, internal::ConfigSource{.custom_objects = &custom_objects});
}

std::unique_ptr<Model> model_from_config(const std::string& config_json, const CustomObjects& custom_objects) {
  return model_from_json(config_json, custom_objects);
}

}  // namespace kiln::keras
