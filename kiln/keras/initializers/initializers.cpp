// Initializers: Keras formulas (variance scaling, truncated normal) over Philox bits.
#include "kiln/keras/initializers/initializers.h"

#include <cmath>
#include <functional>
#include <numbers>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/core/rng.h"

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

HostTensor Initializer::operator()(const Shape& shape, const std::string& weight_name) const {
  HostTensor t(shape.with_dtype(DType::kF32));
  auto out = t.data<float>();
  Uniform01 u(seed ? *seed : std::hash<std::string>{}(weight_name));
  auto [fan_in, fan_out] = compute_fans(shape.dims());
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
  } else if (name == "random_uniform") {
    fill([&] { return minval + (maxval - minval) * u.next(); });
  } else if (name == "glorot_uniform" || name == "he_uniform") {
    const double scale = name == "he_uniform" ? 2.0 / fan_in : 2.0 / (fan_in + fan_out);
    const double limit = std::sqrt(3.0 * scale);
    fill([&] { return limit * (2.0 * u.next() - 1.0); });
  } else if (name == "glorot_normal" || name == "he_normal" || name == "lecun_normal") {
    const double scale = name == "glorot_normal" ? 2.0 / (fan_in + fan_out)
                         : name == "he_normal"   ? 2.0 / fan_in
                                                 : 1.0 / fan_in;
    // Keras divides by the stddev of a unit normal truncated at 2.
    const double sd = std::sqrt(scale) / 0.87962566103423978;
    fill([&] { return sd * truncated_normal(u); });
  } else {
    KILN_THROW(ConfigError, "[initializers] unknown initializer '", name,
               "'. Hint: use glorot_uniform, glorot_normal, he_normal, he_uniform, lecun_normal, "
               "zeros, ones, constant, random_normal or random_uniform.");
  }
  return shape.dtype() == DType::kF32 ? t : t.astype(shape.dtype());
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
  if (name != "zeros" && name != "ones" && name != "constant")
    config["seed"] = seed ? nlohmann::json(*seed) : nlohmann::json(nullptr);
  return config.dump();
}

}  // namespace kiln::keras
