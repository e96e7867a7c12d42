// Activations by Keras name: relu, sigmoid, tanh, softmax, gelu, elu, selu, softplus, softsign,
// swish (silu), exponential, hard_sigmoid, leaky_relu, relu6, linear (also "" = linear); and
// ActivationArg, a layer's activation option: one of those names or a C++ callable.
#pragma once

#include <concepts>
#include <functional>
#include <string>
#include <type_traits>

#include "kiln/trace/tensor.h"

namespace kiln::keras::activations {

using ActivationFn = std::function<Tensor(const Tensor&)>;

/// Keras 3's keras.activations.leaky_relu default slope (the name "leaky_relu" uses it).
inline constexpr double kLeakyReluFunctionSlope = 0.2;
/// Keras 2 and 3's layers.LeakyReLU default slope (alpha / negative_slope).
inline constexpr double kLeakyReluLayerSlope = 0.3;

Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
/// Along the last axis.
Tensor softmax(const Tensor& x);
/// x * Phi(x): the exact erf form (Keras's default approximate=False), or with `approximate`
/// the tanh form 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
Tensor gelu(const Tensor& x, bool approximate = false);
Tensor linear(const Tensor& x);
Tensor elu(const Tensor& x);
Tensor selu(const Tensor& x);
Tensor softplus(const Tensor& x);
Tensor softsign(const Tensor& x);
/// x * sigmoid(x) (also "silu").
Tensor swish(const Tensor& x);
Tensor exponential(const Tensor& x);
/// Keras 2's clip(0.2 x + 0.5, 0, 1).
Tensor hard_sigmoid(const Tensor& x);
/// x if x >= 0 else negative_slope * x.
Tensor leaky_relu(const Tensor& x, double negative_slope = kLeakyReluFunctionSlope);
/// min(max(x, 0), 6).
Tensor relu6(const Tensor& x);

/// The activation named `name`; ConfigError listing the known names otherwise.
ActivationFn get(const std::string& name);

}  // namespace kiln::keras::activations

namespace kiln::keras {

/// A layer's activation option: a Keras name ("relu"; "" = linear) or any C++ callable
/// Tensor(const Tensor&), e.g. `Dense(64, {.activation = [](const Tensor& x) { return x * x; }})`.
/// A callable runs like a name but has no Keras config: saving its layer is a ConfigError.
class ActivationArg {
 public:
  ActivationArg(const char* name) : name_(name) {}  // NOLINT: implicit, as Keras takes names
  ActivationArg(std::string name) : name_(std::move(name)) {}  // NOLINT
  template <typename F>
    requires(std::is_invocable_r_v<Tensor, F, const Tensor&> && !std::is_convertible_v<F, std::string>)
  ActivationArg(F fn) : fn_(std::move(fn)) {}  // NOLINT

  bool is_callable() const { return static_cast<bool>(fn_); }
  /// The Keras name ("" for linear and for callables).
  const std::string& name() const { return name_; }
  /// True for linear (no activation).
  bool empty() const { return !fn_ && (name_.empty() || name_ == "linear"); }
  /// ConfigError unless this is a callable or a known name (as Keras checks at construction).
  void check() const;
  Tensor operator()(const Tensor& x) const;
  /// The config value ("linear" for none); ConfigError naming `layer` for a callable.
  std::string config_name(const std::string& layer) const;

 private:
  std::string name_;
  activations::ActivationFn fn_;
};

}  // namespace kiln::keras
