// The logical CPU device count (process-wide configuration) and per-device thread shares.
#include "kiln/distribute/logical_devices.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cctype>

#include "kiln/core/check.h"
#include "kiln/core/debug_options.h"

namespace kiln::config {
namespace {

std::atomic<int> g_cpu_devices{0};  // 0: not set, use KILN_CPU_DEVICES

}  // namespace

void set_logical_cpu_devices(int n) {
  if (n < 1 || n > 1024)
    KILN_THROW(ValueError, "[set_logical_cpu_devices] expected 1 to 1024 devices, received ", n, ".");
  g_cpu_devices = n;
}

int logical_cpu_devices() {
  const int set = g_cpu_devices.load();
  if (set > 0) return set;
  return std::max(1, DebugOptions::global().cpu_devices);
}

}  // namespace kiln::config

namespace kiln::distribute {

int host_threads() { return std::max(1, omp_get_max_threads()); }

int threads_per_device(int devices) { return std::max(1, host_threads() / std::max(1, devices)); }

std::vector<std::string> logical_cpu_device_names() {
  std::vector<std::string> names;
  for (int i = 0; i < config::logical_cpu_devices(); ++i) names.push_back(str_cat("cpu:", i));
  return names;
}

int parse_cpu_device(const std::string& name) {
  std::string s = name;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* prefix : {"/device:", "/"})
    if (s.rfind(prefix, 0) == 0) s = s.substr(std::string(prefix).size());
  const int n = config::logical_cpu_devices();
  int index = -1;
  if (s.rfind("cpu:", 0) == 0 && s.size() > 4 &&
      std::all_of(s.begin() + 4, s.end(), [](unsigned char c) { return std::isdigit(c) != 0; }) && s.size() < 9)
    index = std::stoi(s.substr(4));
  if (index < 0 || index >= n)
    KILN_THROW(ConfigError, "[MirroredStrategy] unknown device '", name, "'; this host has ", n,
               " logical CPU device", n == 1 ? "" : "s", " (cpu:0", n > 1 ? str_cat(" .. cpu:", n - 1) : "",
               "). Hint: config::set_logical_cpu_devices(n) or KILN_CPU_DEVICES=n splits the host into n devices.");
  return index;
}

void set_thread_share(int threads) { omp_set_num_threads(std::max(1, threads)); }

}  // namespace kiln::distribute
