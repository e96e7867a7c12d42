// Losses by Keras name or class: one table serves compile("mae"), training_config's
// {"class_name", "config"} and Keras's aliases ("mse", "kld", "logcosh", ...).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <string_view>
#include <vector>

#include "kiln/core/check.h"
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

struct LossEntry {
  std::string_view class_name;
  std::vector<std::string_view> names;  // the function name first, then Keras's aliases
  std::function<LossHandle(const json& config)> make;
};

const std::vector<LossEntry>& loss_table() {
  static const std::vector<LossEntry> table = {
      {"SparseCategoricalCrossentropy", {"sparse_categorical_crossentropy"},
       [](const json& c) { return LossHandle(SparseCategoricalCrossentropy(crossentropy_options(c))); }},
      {"CategoricalCrossentropy", {"categorical_crossentropy"},
       [](const json& c) { return LossHandle(CategoricalCrossentropy(crossentropy_options(c))); }},
      {"BinaryCrossentropy", {"binary_crossentropy"},
       [](const json& c) { return LossHandle(BinaryCrossentropy(crossentropy_options(c))); }},
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
       }},
      {"CosineSimilarity", {"cosine_similarity"},
       [](const json& c) {
         return LossHandle(CosineSimilarity({.axis = c.value("axis", -1), .reduction = reduction_from(c),
                                             .name = c.value("name", "cosine_similarity")}));
       }},
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
