// Losses by Keras name or class: one table serves compile("mae"), training_config's
// {"class_name", "config"} and Keras's aliases ("mse", "kld", "logcosh", ...).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <string_view>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/losses/losses.h"

namespace kiln::keras {
namespace {

using nlohmann::json;

// Keras 2 calls sum_over_batch_size "auto" in the configs it writes.
std::string reduction_from(const json& config) {
  std::string r = config.value("reduction", "sum_over_batch_size");
  return r == "auto" ? "sum_over_batch_size" : r;
}

std::string name_from(const json& config) { return config.value("name", ""); }

CrossentropyOptions crossentropy_options(const json& c) {
  return {.from_logits = c.value("from_logits", false), .label_smoothing = c.value("label_smoothing", 0.0),
          .reduction = reduction_from(c), .name = name_from(c)};
}

template <typename T>
LossHandle wrapped(const json& c) {
  return T(LossOptions{.reduction = reduction_from(c), .name = name_from(c)});
}

// The keys every loss config may hold: Loss.get_config's name and reduction, and tf.keras
// 2.13+'s fn (the wrapped function's name, which the class already implies).
constexpr internal::ConfigKey kLossKeys[] = {{"name"}, {"reduction"}, {"fn"}};
// Each class's own keys (its function's keyword arguments) in tf.keras 2.x and Keras 3:
// axis is written by tf.keras 2.6+ and Keras 3 and is the last axis unless set; Kiln's
// crossentropies reduce over it only.
constexpr std::string_view kLastAxisOnly = "Kiln's crossentropies take the class axis last";
constexpr internal::ConfigKey kCrossentropyKeys[] = {
    {"from_logits"}, {"label_smoothing"}, {"axis", "-1", kLastAxisOnly}};
constexpr internal::ConfigKey kSparseCrossentropyKeys[] = {
    {"from_logits"},
    {"ignore_class", "null", "Kiln's SparseCategoricalCrossentropy counts every label"},
    {"axis", "-1", kLastAxisOnly}};
constexpr internal::ConfigKey kHuberKeys[] = {{"delta"}};
constexpr internal::ConfigKey kCosineSimilarityKeys[] = {{"axis"}};

struct LossEntry {
  std::string_view class_name;
  std::vector<std::string_view> names;  // the function name first, then Keras's aliases
  std::function<LossHandle(const json& config)> make;
  internal::ConfigKeys keys = {};  // beyond kLossKeys
};

const std::vector<LossEntry>& loss_table() {
  static const std::vector<LossEntry> table = {
      {"SparseCategoricalCrossentropy", {"sparse_categorical_crossentropy"},
       [](const json& c) { return LossHandle(SparseCategoricalCrossentropy(crossentropy_options(c))); },
       kSparseCrossentropyKeys},
      {"CategoricalCrossentropy", {"categorical_crossentropy"},
       [](const json& c) { return LossHandle(CategoricalCrossentropy(crossentropy_options(c))); }, kCrossentropyKeys},
      {"BinaryCrossentropy", {"binary_crossentropy"},
       [](const json& c) { return LossHandle(BinaryCrossentropy(crossentropy_options(c))); }, kCrossentropyKeys},
      {"MeanSquaredError", {"mean_squared_error", "mse", "MSE"},
       [](const json& c) {
         return LossHandle(MeanSquaredError({.reduction = reduction_from(c),
                                             .name = c.value("name", "mean_squared_error")}));
       }},
      {"MeanAbsoluteError", {"mean_absolute_error", "mae", "MAE"}, wrapped<MeanAbsoluteError>},
      {"MeanAbsolutePercentageError", {"mean_absolute_percentage_error", "mape", "MAPE"},
       wrapped<MeanAbsolutePercentageError>},
      {"MeanSquaredLogarithmicError", {"mean_squared_logarithmic_error", "msle", "MSLE"},
       wrapped<MeanSquaredLogarithmicError>},
      {"LogCosh", {"log_cosh", "logcosh"}, wrapped<LogCosh>},
      {"KLDivergence", {"kl_divergence", "kld", "KLD", "kullback_leibler_divergence"}, wrapped<KLDivergence>},
      {"Hinge", {"hinge"}, wrapped<Hinge>},
      {"SquaredHinge", {"squared_hinge"}, wrapped<SquaredHinge>},
      {"CategoricalHinge", {"categorical_hinge"}, wrapped<CategoricalHinge>},
      {"Poisson", {"poisson"}, wrapped<Poisson>},
      {"Huber", {"huber", "huber_loss"},
       [](const json& c) {
         return LossHandle(Huber({.delta = c.value("delta", 1.0), .reduction = reduction_from(c),
                                  .name = c.value("name", "huber_loss")}));
       },
       kHuberKeys},
      {"CosineSimilarity", {"cosine_similarity"},
       [](const json& c) {
         return LossHandle(CosineSimilarity({.axis = c.value("axis", -1), .reduction = reduction_from(c),
                                             .name = c.value("name", "cosine_similarity")}));
       },
       kCosineSimilarityKeys},
  };
  return table;
}

std::string known_names() {
  std::string out;
  for (const LossEntry& e : loss_table()) out += std::string(out.empty() ? "" : ", ") + std::string(e.names[0]);
  return out;
}

}  // namespace

LossHandle::LossHandle(const char* name) {
  const std::string_view n = name;
  for (const LossEntry& e : loss_table())
    for (std::string_view alias : e.names)
      if (n == alias) {
        *this = e.make(json::object());
        return;
      }
  KILN_THROW(ConfigError, "[compile] unknown loss '", n, "'. Hint: use one of ", known_names(),
             " (or an alias such as mse, mae, kld), or a Loss object.");
}

LossHandle loss_from_config(const std::string& class_name, const std::string& config_json) {
  json config;
  try {
    config = config_json.empty() ? json::object() : json::parse(config_json);
  } catch (const json::exception&) {
    KILN_THROW(ConfigError, "[losses] the config of loss '", class_name, "' is not JSON: ", config_json, ".");
  }
  if (!config.is_object())
    KILN_THROW(ConfigError, "[losses] the config of loss '", class_name, "' must be an object, received ",
               config.dump(), ".");
  for (const LossEntry& e : loss_table())
    if (class_name == e.class_name || std::find(e.names.begin(), e.names.end(), class_name) != e.names.end()) {
      internal::expect_only_keys(config, {e.keys, kLossKeys}, e.class_name, "losses");
      try {
        return e.make(config);
      } catch (const json::exception&) {
        KILN_THROW(ConfigError, "[losses] loss '", class_name, "' has a key of the wrong type in ", config.dump(), ".");
      }
    }
  std::string classes;
  for (const LossEntry& e : loss_table()) classes += std::string(classes.empty() ? "" : ", ") + std::string(e.class_name);
  KILN_THROW(ConfigError, "[losses] unknown loss class '", class_name, "'. Hint: Kiln knows ", classes,
             "; load with compile=false and compile yourself.");
}

}  // namespace kiln::keras
