// Weight initializers by Keras name: glorot_uniform (the kernel default), glorot_normal,
// he_normal, he_uniform, lecun_normal, lecun_uniform, variance_scaling (which all of those
// are), truncated_normal, orthogonal (the recurrent kernels' default), zeros, ones, constant, random_normal, random_uniform.
// Values come from Philox (core/rng.h) so they are identical on every machine; an unseeded
// initializer derives its seed from the weight's name, which keeps runs reproducible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kiln/core/host_tensor.h"

namespace kiln::keras {

/// An initializer: a Keras name plus its arguments. Converts from a name:
/// `Dense(10, {.kernel_initializer = "he_normal"})`.
struct Initializer {
  std::string name = "glorot_uniform";
  std::optional<uint64_t> seed;
  double mean = 0.0, stddev = 0.05;     // random_normal
  double minval = -0.05, maxval = 0.05;  // random_uniform
  double value = 0.0;                    // constant
  double scale = 1.0;                    // variance_scaling; orthogonal's gain
  std::string mode = "fan_in";           // variance_scaling: fan_in, fan_out or fan_avg
  std::string distribution = "truncated_normal";  // variance_scaling: truncated_normal,
                                                  // untruncated_normal, uniform ("normal" = truncated)

  Initializer() = default;
  Initializer(const char* n) : name(n) {}         // NOLINT: implicit on purpose
  Initializer(std::string n) : name(std::move(n)) {}  // NOLINT
  /// A seeded initializer: Initializer("he_normal", /*seed=*/3).
  Initializer(std::string n, uint64_t s) : name(std::move(n)), seed(s) {}

  /// A tensor of `shape`; `weight_name` seeds it when no seed is set.
  HostTensor operator()(const Shape& shape, const std::string& weight_name) const;
  /// Keras class name ("GlorotUniform") and config JSON ({"seed": null}).
  std::string class_name() const;
  std::string config_json() const;

  /// The initializer a Keras config describes, in every form Keras 2.x and 3 wrote: a name
  /// ("glorot_uniform", "normal"), a class name ("GlorotUniform", "VarianceScaling") with its
  /// config ({"scale", "mode", "distribution", "seed"}, ...), as `class_name` + `config_json`
  /// ("{}" when none). ConfigError naming the class or the argument Kiln does not know.
  static Initializer from_config(const std::string& class_name, const std::string& config_json = "{}");
};

/// Keras _compute_fans: (fan_in, fan_out) of a kernel shape.
std::pair<double, double> compute_fans(const Dims& dims);

}  // namespace kiln::keras
