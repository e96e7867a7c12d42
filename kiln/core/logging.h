// Minimal leveled logging to stderr, gated by DebugOptions::log_level (KILN_LOG).
#pragma once

#include <string>

namespace kiln {

enum class LogLevel { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

/// Writes "kiln <level>: message" to stderr if `level` is enabled.
void log(LogLevel level, const std::string& message);
bool log_enabled(LogLevel level);

}  // namespace kiln
