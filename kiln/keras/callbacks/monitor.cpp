// Monitor: Keras's monitor_op, current - min_delta > best (max) or current + min_delta < best
// (min), with |min_delta|.
#include "kiln/keras/callbacks/monitor.h"

#include <cmath>
#include <limits>

#include "kiln/core/check.h"

namespace kiln::keras {

Monitor::Monitor(std::string name, const std::string& mode, double min_delta, const char* who)
    : name_(std::move(name)), min_delta_(std::fabs(min_delta)) {
  if (mode == "max") {
    maximize_ = true;
  } else if (mode == "auto") {
    maximize_ = name_.find("acc") != std::string::npos || name_.find("auc") != std::string::npos;
  } else if (mode != "min") {
    KILN_THROW(ConfigError, "[", who, "] unknown mode '", mode, "'. Hint: use min, max or auto.");
  }
}

bool Monitor::improved(double current, double reference) const {
  return maximize_ ? current - min_delta_ > reference : current + min_delta_ < reference;
}

double Monitor::worst() const {
  return maximize_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
}

}  // namespace kiln::keras
