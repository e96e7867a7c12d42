// Monitor: which way a monitored log value improves (Keras's mode "min", "max" or "auto") and
// by how much it must move to count; shared by EarlyStopping and ReduceLROnPlateau.
#pragma once

#include <string>

namespace kiln::keras {

class Monitor {
 public:
  /// `mode` "auto" maximizes names with "acc" or "auc" in them, as Keras does. `who` names the
  /// callback in the ConfigError an unknown mode gets.
  Monitor(std::string name, const std::string& mode, double min_delta, const char* who);
  const std::string& name() const { return name_; }
  bool maximize() const { return maximize_; }
  /// Whether `current` beats `reference` by more than min_delta, in the mode's direction.
  bool improved(double current, double reference) const;
  /// Where a best value starts: -inf when maximizing, +inf otherwise.
  double worst() const;

 private:
  std::string name_;
  bool maximize_ = false;
  double min_delta_ = 0;
};

}  // namespace kiln::keras
