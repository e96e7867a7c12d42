// Logs: ordered metric values and their Keras text form.
#include "kiln/keras/trainer/logs.h"

#include <cmath>
#include <cstdio>

#include "kiln/core/check.h"

namespace kiln::keras {

void Logs::set(const std::string& name, double value) {
  for (auto& [key, v] : items_) {
    if (key == name) {
      v = value;
      return;
    }
  }
  items_.emplace_back(name, value);
}

bool Logs::contains(const std::string& name) const {
  for (const auto& item : items_)
    if (item.first == name) return true;
  return false;
}

double Logs::at(const std::string& name) const {
  std::string present;
  for (const auto& [key, v] : items_) {
    if (key == name) return v;
    present += (present.empty() ? "" : ", ") + key;
  }
  KILN_THROW(ValueError, "[logs] no value named '", name, "'; the logs hold: ", present,
             ". Hint: monitor one of these (validation values need validation_data).");
}

std::string Logs::to_string() const {
  std::string out;
  char buf[64];
  for (const auto& [key, v] : items_) {
    // Keras: 4 decimals, scientific notation for tiny values.
    std::snprintf(buf, sizeof buf, std::fabs(v) > 1e-3 || v == 0 ? "%.4f" : "%.4e", v);
    out += (out.empty() ? "" : " - ") + key + ": " + buf;
  }
  return out;
}

}  // namespace kiln::keras
