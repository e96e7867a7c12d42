// Reading the KILN_* environment variables.
#include "kiln/core/debug_options.h"

#include <cctype>
#include <cstdlib>
#include <sstream>

#include "kiln/core/check.h"

namespace kiln {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

bool parse_bool(const std::string& text, const char* name, bool fallback) {
  if (text.empty()) return fallback;
  if (text == "1" || text == "true" || text == "on") return true;
  if (text == "0" || text == "false" || text == "off") return false;
  KILN_THROW(ConfigError, "[", name, "] expected 0 or 1, received '", text, "'.");
}

}  // namespace

int64_t parse_byte_size(const std::string& text, const std::string& what) {
  size_t pos = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &pos);
  } catch (const std::exception&) {
    pos = std::string::npos;
  }
  if (pos == std::string::npos || value < 0)
    KILN_THROW(ConfigError, "[", what, "] expected a byte count such as 1073741824, 512M or 2G, received '",
               text, "'.");
  std::string suffix = text.substr(pos);
  int shift = 0;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") shift = 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") shift = 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") shift = 30;
  else if (!suffix.empty())
    KILN_THROW(ConfigError, "[", what, "] unknown size suffix '", suffix, "' in '", text,
               "'. Hint: use K, M or G.");
  return static_cast<int64_t>(value) << shift;
}

DebugOptions DebugOptions::from_env() {
  DebugOptions o;
  o.dump_ir_dir = env("KILN_DUMP_IR");
  std::stringstream passes(env("KILN_DISABLE_PASSES"));
  for (std::string name; std::getline(passes, name, ',');)
    if (!name.empty()) o.disabled_passes.push_back(name);
  o.verify_ir = parse_bool(env("KILN_VERIFY_IR"), "KILN_VERIFY_IR", true);
  o.no_memory_planner = parse_bool(env("KILN_NO_MEMORY_PLANNER"), "KILN_NO_MEMORY_PLANNER", false);
  if (const std::string profile = env("KILN_PROFILE"); profile.ends_with(".json"))
    o.profile_trace = profile;
  else
    o.profile = parse_bool(profile, "KILN_PROFILE", false);
  o.codegen = parse_bool(env("KILN_CODEGEN"), "KILN_CODEGEN", true);
  o.thread_governor = parse_bool(env("KILN_THREAD_GOVERNOR"), "KILN_THREAD_GOVERNOR", true);
  o.unlisted_fallbacks = parse_bool(env("KILN_UNLISTED_FALLBACKS"), "KILN_UNLISTED_FALLBACKS", false);
  o.kernel_cache_dir = env("KILN_CACHE_DIR");
  if (o.kernel_cache_dir == "off") o.kernel_cache_dir.clear();
  else if (o.kernel_cache_dir.empty() && !env("HOME").empty()) o.kernel_cache_dir = env("HOME") + "/.cache/kiln/kernels";
  if (std::string c = env("KILN_16BIT_CONTRACTIONS"); !c.empty()) {
    if (c != "auto" && c != "native" && c != "f32")
      KILN_THROW(ConfigError, "[KILN_16BIT_CONTRACTIONS] expected auto, native or f32, received '", c, "'.");
    o.sixteen_bit_contractions = c;
  }
  if (std::string b = env("KILN_BATCH_INVARIANT"); !b.empty())
    o.batch_invariant = parse_bool(b, "KILN_BATCH_INVARIANT", false);
  if (std::string device = env("KILN_DEVICE"); !device.empty()) {
    if (device != "cpu" && device != "guarded_cpu")
      KILN_THROW(ConfigError, "[KILN_DEVICE] expected cpu or guarded_cpu, received '", device, "'.");
    o.device = device;
  }
  if (std::string limit = env("KILN_CPU_MEMORY_LIMIT"); !limit.empty())
    o.cpu_memory_limit = parse_byte_size(limit, "KILN_CPU_MEMORY_LIMIT");
  if (std::string devices = env("KILN_CPU_DEVICES"); !devices.empty()) {
    char* end = nullptr;
    const long n = std::strtol(devices.c_str(), &end, 10);
    if (end == devices.c_str() || *end != '\0' || n < 1 || n > 1024)
      KILN_THROW(ConfigError, "[KILN_CPU_DEVICES] expected a device count from 1 to 1024, received '", devices, "'.");
    o.cpu_devices = static_cast<int>(n);
  }
  if (std::string level = env("KILN_LOG"); !level.empty()) {
    if (level.size() != 1 || level[0] < '0' || level[0] > '3')
      KILN_THROW(ConfigError, "[KILN_LOG] expected 0, 1, 2 or 3, received '", level, "'.");
    o.log_level = level[0] - '0';
  }
  return o;
}

const DebugOptions& DebugOptions::global() {
  static const DebugOptions options = from_env();
  return options;
}

}  // namespace kiln
