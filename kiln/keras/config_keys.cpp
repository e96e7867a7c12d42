// The strict key check of every Keras config reader (config_keys_impl.h).
#include "kiln/keras/config_keys_impl.h"

#include "kiln/core/check.h"

namespace kiln::keras::internal {
namespace {

const ConfigKey* find_key(const std::vector<ConfigKeys>& tables, std::string_view name) {
  for (ConfigKeys table : tables)
    for (const ConfigKey& k : table)
      if (k.name == name) return &k;
  return nullptr;
}

std::string key_list(const std::vector<ConfigKeys>& tables) {
  std::string out;
  for (ConfigKeys table : tables)
    for (const ConfigKey& k : table)
      if (find_key(tables, k.name) == &k) out += str_cat(out.empty() ? "" : ", ", k.name);
  return out;
}

std::string excerpt(const nlohmann::json& v) {
  const std::string text = v.dump();
  return text.size() > 120 ? text.substr(0, 120) + "..." : text;
}

}  // namespace

void expect_only_keys(const nlohmann::json& config, const std::vector<ConfigKeys>& tables, std::string_view what,
                      std::string_view where) {
  if (!config.is_object())
    KILN_THROW(ConfigError, "[", where, "] expected the ", what, " config as a JSON object, received ", excerpt(config),
               ".");
  for (const auto& [key, value] : config.items()) {
    const ConfigKey* k = find_key(tables, key);
    if (k == nullptr)
      KILN_THROW(ConfigError, "[", where, "] ", what, " config has an unexpected key '", key, "' (= ", excerpt(value),
                 "): no Keras release writes it for ", what, ", and Keras's from_config rejects it too. Hint: the file "
                 "is damaged or was edited; ", what, " takes ", key_list(tables), ".");
    if (k->only.empty()) continue;
    const nlohmann::json only = nlohmann::json::parse(k->only);
    if (value != only)
      KILN_THROW(ConfigError, "[", where, "] config key '", key, "' = ", excerpt(value), " is not supported: ", what,
                 " loads with ", key, "=", k->only, " only. Hint: ", k->why.empty() ? kNotBuiltInKiln : k->why, ".");
  }
}

ConfigKeys layer_base_keys() {
  // Keras 2's base Layer.get_config: name, trainable, dtype, batch_input_shape (when declared),
  // dynamic (tf.keras 2.x, when true: eager execution, which changes no value); Keras 3's adds
  // activity_regularizer when set.
  static constexpr ConfigKey kKeys[] = {
      {"name"}, {"trainable"}, {"dtype"}, {"batch_input_shape"}, {"dynamic"},
      {"activity_regularizer", "null", "Kiln builds activity regularizers on Dense, convolution and recurrent layers only"},
  };
  return kKeys;
}

void expect_layer_keys(const nlohmann::json& config, std::vector<ConfigKeys> tables, std::string_view cls) {
  cls = cls.substr(0, cls.find('.'));
  const std::string name =
      config.is_object() && config.contains("name") && config["name"].is_string() && !config["name"].empty()
          ? config["name"].get<std::string>()
          : std::string(cls);
  tables.push_back(layer_base_keys());
  expect_only_keys(config, tables, cls, name);
}

ConfigKeys kernel_field_keys() {
  static constexpr ConfigKey kKeys[] = {
      {"activation"},       {"use_bias"},          {"kernel_initializer"}, {"bias_initializer"}, {"kernel_regularizer"},
      {"bias_regularizer"}, {"activity_regularizer"}, {"kernel_constraint"}, {"bias_constraint"},
  };
  return kKeys;
}

ConfigKeys lora_and_quantization_keys() {
  // Keras 3.0.3-3.9 write lora_rank always (null when off); 3.10+ write lora_rank and
  // lora_alpha only when LoRA is on, and 3.13+ quantization_config always (null when off).
  static constexpr std::string_view kLora =
      "Kiln does not build LoRA adapters; merge them into the kernel in Keras (layer.enable_lora off) before saving";
  static constexpr std::string_view kQuantized = "Kiln does not build quantized layers; save the float model";
  static constexpr ConfigKey kKeys[] = {
      {"lora_rank", "null", kLora}, {"lora_alpha", "null", kLora}, {"quantization_config", "null", kQuantized}};
  return kKeys;
}

ConfigKeys serialized_object_keys() {
  static constexpr ConfigKey kKeys[] = {{"class_name"},    {"config"},         {"module"},          {"registered_name"},
                                        {"build_config"},  {"compile_config"}, {"shared_object_id"}};
  return kKeys;
}

}  // namespace kiln::keras::internal
