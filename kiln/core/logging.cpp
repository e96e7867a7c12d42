// Logging sink: one line per message, written whole so threads do not interleave.
#include "kiln/core/logging.h"

#include <cstdio>

#include "kiln/core/debug_options.h"

namespace kiln {

bool log_enabled(LogLevel level) {
  return static_cast<int>(level) <= DebugOptions::global().log_level;
}

void log(LogLevel level, const std::string& message) {
  if (!log_enabled(level)) return;
  static constexpr const char* kNames[] = {"error", "warning", "info", "debug"};
  std::string line = std::string("kiln ") + kNames[static_cast<int>(level)] + ": " + message + "\n";
  std::fputs(line.c_str(), stderr);
}

}  // namespace kiln
