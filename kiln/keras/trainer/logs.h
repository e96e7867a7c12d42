// Logs: the ordered name -> value map Keras hands to callbacks ("loss", "accuracy",
// "val_loss", ...), and History, the per-epoch record fit returns.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kiln::keras {

/// Metric values by name, kept in insertion order (loss first, then compile's metrics).
class Logs {
 public:
  /// Sets `name` (replacing an existing value in place).
  void set(const std::string& name, double value);
  bool contains(const std::string& name) const;
  /// The value of `name`; throws ValueError listing the names present when missing.
  double at(const std::string& name) const;
  bool empty() const { return items_.empty(); }
  const std::vector<std::pair<std::string, double>>& items() const { return items_; }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  /// "loss: 0.2903 - accuracy: 0.9171" (Keras's progress-bar formatting).
  std::string to_string() const;

 private:
  std::vector<std::pair<std::string, double>> items_;
};

/// What fit returns: history["loss"][epoch], one entry per epoch run.
struct History {
  std::vector<int> epoch;
  std::map<std::string, std::vector<double>> history;
};

}  // namespace kiln::keras
