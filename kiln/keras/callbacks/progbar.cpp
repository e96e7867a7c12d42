// Progbar: Keras 2's generic_utils.Progbar formatting.
#include "kiln/keras/callbacks/progbar.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace kiln::keras {
namespace {

std::string format_duration(double seconds) {  // Keras ETA form: 1:02:03, 2:03, 7s
  const auto s = static_cast<int64_t>(seconds);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)(s / 3600), (long long)(s % 3600 / 60), (long long)(s % 60));
  else if (s >= 60) std::snprintf(buf, sizeof buf, "%lld:%02lld", (long long)(s / 60), (long long)(s % 60));
  else std::snprintf(buf, sizeof buf, "%llds", (long long)s);
  return buf;
}

std::string format_per_step(double seconds_per_step) {
  char buf[32];
  if (seconds_per_step >= 1) std::snprintf(buf, sizeof buf, "%.0fs/step", seconds_per_step);
  else if (seconds_per_step >= 1e-3) std::snprintf(buf, sizeof buf, "%.0fms/step", seconds_per_step * 1e3);
  else std::snprintf(buf, sizeof buf, "%.0fus/step", seconds_per_step * 1e6);
  return buf;
}

}  // namespace

bool stdout_is_terminal() { return isatty(fileno(stdout)) != 0; }

Progbar::Progbar(int64_t target, std::ostream& out, bool interactive)
    : target_(target), out_(out), interactive_(interactive) {}

std::string Progbar::format(int64_t current, int64_t target, double seconds, const Logs& logs, bool finalize) {
  std::string line;
  if (target > 0) {
    const int digits = static_cast<int>(std::to_string(target).size());
    char count[48];
    std::snprintf(count, sizeof count, "%*lld/%lld [", digits, (long long)current, (long long)target);
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * static_cast<double>(current) / static_cast<double>(target));
    std::string bar(static_cast<size_t>(std::max(filled - 1, 0)), '=');
    if (filled > 0) bar += current < target ? '>' : '=';
    bar.resize(kWidth, '.');
    line = count + bar + "]";
  } else {
    line = std::to_string(current) + "/Unknown";
  }
  const double per_step = current > 0 ? seconds / static_cast<double>(current) : 0.0;
  if (finalize || target <= 0) {
    char total[32];
    std::snprintf(total, sizeof total, " - %.0fs ", seconds);
    line += total + format_per_step(per_step);
  } else {
    line += " - ETA: " + format_duration(per_step * static_cast<double>(target - current));
  }
  if (!logs.empty()) line += " - " + logs.to_string();
  return line;
}

void Progbar::update(int64_t current, const Logs& logs, bool finalize, const std::string& suffix) {
  const auto now = std::chrono::steady_clock::now();
  if (!finalize && (!interactive_ || now - last_draw_ < std::chrono::milliseconds(50))) return;
  last_draw_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  std::string line = format(current, target_, seconds, logs, finalize);
  if (finalize) line += suffix;
  if (interactive_) out_ << "\r" << line << "\033[K" << (finalize ? "\n" : "") << std::flush;
  else out_ << line << "\n" << std::flush;
}

}  // namespace kiln::keras
