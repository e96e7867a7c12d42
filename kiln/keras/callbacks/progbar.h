// Progbar: Keras's progress line, "468/468 [==============================] - 2s 4ms/step -
// loss: 0.2903 - accuracy: 0.9171". On a terminal it redraws in place; otherwise (a log file,
// a pipe) it prints only the final line of each epoch.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

#include "kiln/keras/trainer/logs.h"

namespace kiln::keras {

class Progbar {
 public:
  /// target: total steps (-1 unknown). interactive: redraw in place (a terminal).
  Progbar(int64_t target, std::ostream& out, bool interactive);
  /// Shows `current` steps done with `logs`; `suffix` is appended to the final line.
  void update(int64_t current, const Logs& logs, bool finalize, const std::string& suffix = "");
  /// The line for `current` steps after `seconds` (exposed for tests).
  static std::string format(int64_t current, int64_t target, double seconds, const Logs& logs, bool finalize);

 private:
  int64_t target_;
  std::ostream& out_;
  bool interactive_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
};

/// True when stdout is a terminal.
bool stdout_is_terminal();

}  // namespace kiln::keras
