// Constraints: Keras's formulas as trace ops, and the Keras config forms.
#include "kiln/keras/constraints.h"

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"

namespace kiln::keras {
namespace {

constexpr double kEpsilon = 1e-7;  // Keras's backend.epsilon()

}  // namespace

Tensor Constraint::operator()(const Tensor& w) const {
  if (name == "non_neg") return w * cast(greater_equal(w, 0.0), w.dtype());
  std::vector<int> axes;
  for (int a : axis) axes.push_back(a < 0 ? a + w.rank() : a);
  const Tensor norms = sqrt(reduce_sum(w * w, axes, /*keepdims=*/true));
  if (name == "unit_norm") return w / (norms + kEpsilon);
  Tensor desired = minimum(maximum(norms, name == "max_norm" ? 0.0 : min_value), max_value);
  if (name == "min_max_norm") desired = rate * desired + (1.0 - rate) * norms;
  return w * (desired / (norms + kEpsilon));
}

std::string Constraint::class_name() const {
  if (name == "non_neg") return "NonNeg";
  if (name == "unit_norm") return "UnitNorm";
  if (name == "min_max_norm") return "MinMaxNorm";
  return "MaxNorm";
}

std::string Constraint::config_json() const {
  nlohmann::json j = nlohmann::json::object();
  if (name == "non_neg") return j.dump();
  j["axis"] = axis.size() == 1 ? nlohmann::json(axis[0]) : nlohmann::json(axis);
  if (name == "max_norm" || name == "min_max_norm") j["max_value"] = max_value;
  if (name == "min_max_norm") {
    j["min_value"] = min_value;
    j["rate"] = rate;
  }
  return j.dump();
}

Constraint Constraint::from_config(const std::string& class_name, const std::string& config_json) {
  Constraint c;
  if (class_name == "MaxNorm" || class_name == "max_norm" || class_name == "maxnorm") c.name = "max_norm";
  else if (class_name == "NonNeg" || class_name == "non_neg" || class_name == "nonneg") c.name = "non_neg";
  else if (class_name == "UnitNorm" || class_name == "unit_norm" || class_name == "unitnorm") c.name = "unit_norm";
  else if (class_name == "MinMaxNorm" || class_name == "min_max_norm") c = {.name = "min_max_norm", .max_value = 1.0};
  else
    KILN_THROW(ConfigError, "[constraints] unknown constraint class '", class_name,
               "'. Hint: Kiln knows MaxNorm, NonNeg, UnitNorm and MinMaxNorm; remove it from the config (it only "
               "changes training) or build the layer in C++.");
  nlohmann::json j = nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_null() || j.is_discarded()) j = nlohmann::json::object();
  if (!j.is_object())
    KILN_THROW(ConfigError, "[constraints] ", class_name, ": expected a config object, received ", j.dump(), ".");
  // As Keras's constructors take them: MaxNorm(max_value, axis), NonNeg(), UnitNorm(axis),
  // MinMaxNorm(min_value, max_value, rate, axis).
  auto takes = [&c](const std::string& key) {
    if (c.name == "non_neg") return false;
    if (key == "axis") return true;
    if (key == "max_value") return c.name != "unit_norm";
    return c.name == "min_max_norm" && (key == "min_value" || key == "rate");
  };
  for (const auto& [key, v] : j.items()) {
    if (!takes(key))
      KILN_THROW(ConfigError, "[constraints] ", class_name, ": unknown config key '", key, "' = ", v.dump(),
                 ". Hint: Keras's ", class_name, " takes no such argument; the file is damaged or was edited.");
    const bool number_key = key == "max_value" || key == "min_value" || key == "rate";
    if (number_key && v.is_number()) {
      (key == "max_value" ? c.max_value : key == "min_value" ? c.min_value : c.rate) = v.get<double>();
    } else if (key == "axis" && v.is_number_integer()) {
      c.axis = {v.get<int>()};
    } else if (key == "axis" && v.is_array()) {
      c.axis.clear();
      for (const nlohmann::json& a : v) {
        if (!a.is_number_integer())
          KILN_THROW(ConfigError, "[constraints] ", class_name, ": axis must hold integers, received ", v.dump(), ".");
        c.axis.push_back(a.get<int>());
      }
    } else {
      KILN_THROW(ConfigError, "[constraints] ", class_name, ": unknown or malformed config key '", key, "' = ",
                 v.dump(), ". Hint: Kiln reads max_value, min_value, rate and axis.");
    }
  }
  return c;
}

}  // namespace kiln::keras
