// Initializers: Keras formulas (variance scaling, truncated normal) over Philox bits.
#include "kiln/keras/initializers/initializers.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/core/rng.h"
#include "kiln/keras/config_keys_impl.h"

namespace kiln::keras {
namespace {

// A uniform [0, 1) stream from Philox: element i of key `seed`.
class Uniform01 {
 public:
  explicit Uniform01(uint64_t seed) : key_(static_cast<int64_t>(seed)) {}
  double next() { return (philox_element_bits(key_, index_++) + 0.5) * 0x1p-32; }

 private:
  int64_t key_;
  int64_t index_ = 0;
};

double normal(Uniform01& u) {  // Box-Muller (one of the pair)
  const double r = std::sqrt(-2.0 * std::log(u.next()));
  return r * std::cos(2.0 * std::numbers::pi * u.next());
}

// Keras truncated_normal: redraws values beyond two standard deviations.
double truncated_normal(Uniform01& u) {
  for (;;) {
    const double z = normal(u);
    if (std::fabs(z) <= 2.0) return z;
  }
}

}  // namespace

std::pair<double, double> compute_fans(const Dims& dims) {
  if (dims.empty()) return {1, 1};
  if (dims.size() == 1) return {double(dims[0]), double(dims[0])};
  if (dims.size() == 2) return {double(dims[0]), double(dims[1])};
  double receptive = 1;  // conv kernels (..., in, out)
  for (size_t i = 0; i + 2 < dims.size(); ++i) receptive *= double(dims[i]);
  return {receptive * double(dims[dims.size() - 2]), receptive * double(dims.back())};
}

namespace {

// The variance-scaling initializers are VarianceScaling with fixed arguments (Keras's
// definitions): scale, mode, distribution.
struct ScalingPreset {
  const char* name;
  double scale;
  const char* mode;
  const char* distribution;
};
constexpr ScalingPreset kPresets[] = {
    {"glorot_uniform", 1.0, "fan_avg", "uniform"}, {"glorot_normal", 1.0, "fan_avg", "truncated_normal"},
    {"he_uniform", 2.0, "fan_in", "uniform"},      {"he_normal", 2.0, "fan_in", "truncated_normal"},
    {"lecun_uniform", 1.0, "fan_in", "uniform"},   {"lecun_normal", 1.0, "fan_in", "truncated_normal"},
};

const ScalingPreset* preset(const std::string& name) {
  for (const ScalingPreset& p : kPresets)
    if (name == p.name) return &p;
  return nullptr;
}

// Keras's VarianceScaling.__call__: scale / max(1, fan); a truncated normal divided by the
// stddev of a unit normal truncated at 2, an untruncated normal, or uniform(-limit, limit).
void fill_variance_scaling(std::span<float> out, Uniform01& u, double scale, const std::string& mode,
                           const std::string& distribution, std::pair<double, double> fans) {
  const auto [fan_in, fan_out] = fans;
  const double fan = mode == "fan_in" ? fan_in : mode == "fan_out" ? fan_out : (fan_in + fan_out) / 2.0;
  scale /= std::max(1.0, fan);
  if (distribution == "uniform") {
    const double limit = std::sqrt(3.0 * scale);
    for (float& v : out) v = static_cast<float>(limit * (2.0 * u.next() - 1.0));
  } else if (distribution == "untruncated_normal") {
    const double sd = std::sqrt(scale);
    for (float& v : out) v = static_cast<float>(sd * normal(u));
  } else {  // "truncated_normal", and "normal" (Keras 2.x's name for it)
    const double sd = std::sqrt(scale) / 0.87962566103423978;
    for (float& v : out) v = static_cast<float>(sd * truncated_normal(u));
  }
}

constexpr const char* kKnown =
    "glorot_uniform, glorot_normal, he_normal, he_uniform, lecun_normal, lecun_uniform, variance_scaling, "
    "truncated_normal, orthogonal, zeros, ones, constant, random_normal or random_uniform";

// Keras's Orthogonal: the Q of a QR of a normal (rows, cols) matrix (rows = the product of all
// but the last dim), signed so R's diagonal is positive, times `gain`; transposed when
// rows < cols so the shorter side is orthonormal. Modified Gram-Schmidt gives that Q.
void fill_orthogonal(std::span<float> out, Uniform01& u, const Dims& dims, double gain) {
  if (dims.size() < 2)
    KILN_THROW(ValueError, "[initializers] orthogonal needs a shape of rank >= 2, received rank ", dims.size(), ".");
  const int64_t cols = dims.back(), rows = static_cast<int64_t>(out.size()) / std::max<int64_t>(cols, 1);
  const bool wide = rows < cols;
  const int64_t n = wide ? cols : rows, k = wide ? rows : cols;  // orthonormalize k columns of length n
  std::vector<double> a(static_cast<size_t>(n * k));
  for (double& v : a) v = normal(u);
  auto at = [&](int64_t i, int64_t j) -> double& { return a[static_cast<size_t>(i * k + j)]; };
  for (int64_t j = 0; j < k; ++j) {
    for (int64_t p = 0; p < j; ++p) {
      double dot = 0;
      for (int64_t i = 0; i < n; ++i) dot += at(i, p) * at(i, j);
      for (int64_t i = 0; i < n; ++i) at(i, j) -= dot * at(i, p);
    }
    double norm = 0;
    for (int64_t i = 0; i < n; ++i) norm += at(i, j) * at(i, j);
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < n; ++i) at(i, j) /= norm;
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<size_t>(r * cols + c)] = static_cast<float>(gain * (wide ? at(c, r) : at(r, c)));
}

}  // namespace

HostTensor Initializer::operator()(const Shape& shape, const std::string& weight_name) const {
  HostTensor t(shape.with_dtype(DType::kF32));
  auto out = t.data<float>();
  Uniform01 u(seed ? *seed : std::hash<std::string>{}(weight_name));
  auto fill = [&](auto draw) {
    for (float& v : out) v = static_cast<float>(draw());
  };
  if (name == "zeros") {
  } else if (name == "ones") {
    fill([] { return 1.0; });
  } else if (name == "constant") {
    fill([&] { return value; });
  } else if (name == "random_normal") {
    fill([&] { return mean + stddev * normal(u); });
  } else if (name == "truncated_normal") {  // Keras: redraws beyond two stddevs, no rescale
    fill([&] { return mean + stddev * truncated_normal(u); });
  } else if (name == "random_uniform") {
    fill([&] { return minval + (maxval - minval) * u.next(); });
  } else if (const ScalingPreset* p = preset(name)) {
    fill_variance_scaling(out, u, p->scale, p->mode, p->distribution, compute_fans(shape.dims()));
  } else if (name == "orthogonal") {
    fill_orthogonal(out, u, shape.dims(), scale);
  } else if (name == "variance_scaling") {
    fill_variance_scaling(out, u, scale, mode, distribution, compute_fans(shape.dims()));
  } else {
    KILN_THROW(ConfigError, "[initializers] unknown initializer '", name, "'. Hint: use ", kKnown, ".");
  }
  return shape.dtype() == DType::kF32 ? t : t.astype(shape.dtype());
}

namespace {

// Each initializer's keys in every Keras release: Keras 1-2.0 configs may carry a dtype
// (values are f32 here); Keras 3.15's variance-scaling family writes input_axes and
// output_axes, null unless set.
std::vector<internal::ConfigKeys> config_keys(const std::string& n) {
  static constexpr std::string_view kAxes = "Kiln computes fans from the weight's shape, as Keras does by default";
  static constexpr internal::ConfigKey kDtype[] = {{"dtype"}};
  static constexpr internal::ConfigKey kConstant[] = {{"value"}};
  static constexpr internal::ConfigKey kNormal[] = {{"mean"}, {"stddev"}, {"seed"}};
  static constexpr internal::ConfigKey kUniform[] = {{"minval"}, {"maxval"}, {"seed"}};
  static constexpr internal::ConfigKey kScaling[] = {{"scale"}, {"mode"}, {"distribution"}, {"seed"}};
  static constexpr internal::ConfigKey kPreset[] = {{"seed"}};
  static constexpr internal::ConfigKey kAxesKeys[] = {{"input_axes", "null", kAxes}, {"output_axes", "null", kAxes}};
  static constexpr internal::ConfigKey kOrthogonal[] = {{"gain"}, {"seed"}};
  if (n == "constant") return {kConstant, kDtype};
  if (n == "random_normal" || n == "truncated_normal") return {kNormal, kDtype};
  if (n == "random_uniform") return {kUniform, kDtype};
  if (n == "variance_scaling") return {kScaling, kAxesKeys, kDtype};
  if (n == "orthogonal") return {kOrthogonal, kDtype};
  if (n == "zeros" || n == "ones") return {kDtype};
  return {kPreset, kAxesKeys, kDtype};  // glorot, he and lecun
}

}  // namespace

Initializer Initializer::from_config(const std::string& class_name, const std::string& config_json) {
  // Keras 2's aliases, and class names in either spelling ("GlorotUniform", "glorot_uniform").
  std::string n;
  for (size_t i = 0; i < class_name.size(); ++i) {
    const char c = class_name[i];
    if (std::isupper(static_cast<unsigned char>(c)) && i > 0 && class_name[i - 1] != '_') n += '_';
    n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (n == "zero") n = "zeros";
  if (n == "one") n = "ones";
  if (n == "normal") n = "random_normal";
  if (n == "uniform") n = "random_uniform";
  if (n == "orthogonal_initializer") n = "orthogonal";  // Keras 3.0-3.3's class name
  Initializer init(n);
  const bool known = n == "zeros" || n == "ones" || n == "constant" || n == "random_normal" ||
                     n == "random_uniform" || n == "truncated_normal" || n == "variance_scaling" || n == "orthogonal" || preset(n);
  if (!known)
    KILN_THROW(ConfigError, "[initializers] unknown initializer class '", class_name, "'. Hint: Kiln knows ", kKnown,
               "; replace it in the config, or build the model in C++ and call load_weights.");
  nlohmann::json c;
  try {
    c = nlohmann::json::parse(config_json);
  } catch (const nlohmann::json::exception& e) {
    KILN_THROW(ConfigError, "[initializers] ", class_name, ": malformed config (", e.what(), ").");
  }
  if (c.is_null()) c = nlohmann::json::object();
  if (!c.is_object())
    KILN_THROW(ConfigError, "[initializers] ", class_name, ": expected a config object, received ", c.dump(), ".");
  if (n == "truncated_normal") init.stddev = 0.05;
  internal::expect_only_keys(c, config_keys(n), class_name, "initializers");
  for (const auto& [key, v] : c.items()) {
    auto number = [&, &key = key, &v = v] {
      if (!v.is_number())
        KILN_THROW(ConfigError, "[initializers] ", class_name, ": '", key, "' must be a number, received ", v.dump(), ".");
      return v.get<double>();
    };
    if (key == "seed") {
      if (!v.is_null()) {
        if (!v.is_number_integer())
          KILN_THROW(ConfigError, "[initializers] ", class_name, ": 'seed' must be an integer or null, received ",
                     v.dump(), ".");
        init.seed = static_cast<uint64_t>(v.get<int64_t>());
      }
    } else if (key == "mean") {
      init.mean = number();
    } else if (key == "stddev") {
      init.stddev = number();
    } else if (key == "minval") {
      init.minval = number();
    } else if (key == "maxval") {
      init.maxval = number();
    } else if (key == "value") {
      init.value = number();
    } else if (key == "scale" || (key == "gain" && n == "orthogonal")) {
      init.scale = number();
    } else if (key == "mode" || key == "distribution") {
      if (!v.is_string())
        KILN_THROW(ConfigError, "[initializers] ", class_name, ": '", key, "' must be a string, received ", v.dump(), ".");
      std::string s = v.get<std::string>();
      for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      const bool ok = key == "mode" ? (s == "fan_in" || s == "fan_out" || s == "fan_avg")
                                    : (s == "normal" || s == "truncated_normal" || s == "untruncated_normal" ||
                                       s == "uniform");
      if (!ok)
        KILN_THROW(ConfigError, "[initializers] ", class_name, ": unknown ", key, " '", s, "'. Hint: Keras's are ",
                   key == "mode" ? "fan_in, fan_out and fan_avg" : "truncated_normal, untruncated_normal and uniform",
                   ".");
      (key == "mode" ? init.mode : init.distribution) = s == "normal" ? "truncated_normal" : s;
    } else if (key != "dtype" && key != "input_axes" && key != "output_axes") {  // checked above
      KILN_THROW(ConfigError, "[initializers] ", class_name, ": unknown config key '", key, "' = ", v.dump(),
                 ". Hint: Kiln reads seed, mean, stddev, minval, maxval, value, scale, gain (orthogonal), mode and distribution.");
    }
  }
  // A VarianceScaling that is one of the named initializers becomes that name, so it draws
  // the same values and saves under the shorter class.
  if (n == "variance_scaling")
    for (const ScalingPreset& p : kPresets)
      if (init.scale == p.scale && init.mode == p.mode && init.distribution == p.distribution) init.name = p.name;
  return init;
}

std::string Initializer::class_name() const {
  std::string out;
  bool upper = true;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

std::string Initializer::config_json() const {
  nlohmann::json config = nlohmann::json::object();
  if (name == "random_normal") config = {{"mean", mean}, {"stddev", stddev}};
  if (name == "random_uniform") config = {{"minval", minval}, {"maxval", maxval}};
  if (name == "constant") config = {{"value", value}};
  if (name == "truncated_normal") config = {{"mean", mean}, {"stddev", stddev}};
  if (name == "variance_scaling") config = {{"scale", scale}, {"mode", mode}, {"distribution", distribution}};
  if (name == "orthogonal") config = {{"gain", scale}};
  if (name != "zeros" && name != "ones" && name != "constant")
    config["seed"] = seed ? nlohmann::json(*seed) : nlohmann::json(nullptr);
  return config.dump();
}

}  // namespace kiln::keras
