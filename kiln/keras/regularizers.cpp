// Regularizers: the penalty as trace ops, and the Keras config forms.
#include "kiln/keras/regularizers.h"

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"

namespace kiln::keras {

Tensor Regularizer::operator()(const Tensor& w) const {
  Tensor x = cast(w, DType::kF32);
  Tensor penalty = zeros(Shape(DType::kF32, {}));
  if (l1 != 0.0) penalty = penalty + l1 * reduce_sum(abs(x));
  if (l2 != 0.0) penalty = penalty + l2 * reduce_sum(x * x);
  return penalty;
}

std::string Regularizer::class_name() const {
  if (l1 != 0.0 && l2 == 0.0) return "L1";
  if (l2 != 0.0 && l1 == 0.0) return "L2";
  return "L1L2";
}

std::string Regularizer::config_json() const {
  const std::string cls = class_name();
  nlohmann::json j = nlohmann::json::object();
  if (cls != "L2") j["l1"] = l1;
  if (cls != "L1") j["l2"] = l2;
  return j.dump();
}

Regularizer Regularizer::from_config(const std::string& class_name, const std::string& config_json) {
  // Keras's string names build the class with 0.01 factors; configs carry their own.
  Regularizer r;
  if (class_name == "l1" || class_name == "L1") r.l1 = 0.01;
  else if (class_name == "l2" || class_name == "L2") r.l2 = 0.01;
  else if (class_name == "l1_l2") r = {.l1 = 0.01, .l2 = 0.01};
  else if (class_name != "L1L2")
    KILN_THROW(ConfigError, "[regularizers] unknown regularizer class '", class_name,
               "'. Hint: Kiln knows L1L2, L1 and L2 (l1, l2, l1_l2); OrthogonalRegularizer and custom ones are "
               "not built. Remove it from the config (it only changes training) or load with a custom layer.");
  nlohmann::json c = nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (c.is_null() || c.is_discarded()) c = nlohmann::json::object();
  if (!c.is_object())
    KILN_THROW(ConfigError, "[regularizers] ", class_name, ": expected a config object, received ", c.dump(), ".");
  // As Keras's constructors take them: L1(l1), L2(l2), L1L2(l1, l2).
  const bool takes_l1 = class_name != "L2" && class_name != "l2", takes_l2 = class_name != "L1" && class_name != "l1";
  for (const auto& [key, v] : c.items()) {
    if ((key != "l1" || !takes_l1) && (key != "l2" || !takes_l2))
      KILN_THROW(ConfigError, "[regularizers] ", class_name, ": unknown config key '", key, "'. Hint: ", class_name,
                 " takes ", takes_l1 && takes_l2 ? "l1 and l2" : takes_l1 ? "l1" : "l2", ".");
    if (!v.is_number())
      KILN_THROW(ConfigError, "[regularizers] ", class_name, ": '", key, "' must be a number, received ", v.dump(), ".");
    (key == "l1" ? r.l1 : r.l2) = v.get<double>();
  }
  return r;
}

}  // namespace kiln::keras
