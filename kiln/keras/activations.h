// Activations by Keras name: relu, sigmoid, tanh, softmax, gelu, elu, selu, softplus, softsign,
// swish (silu), exponential, hard_sigmoid, linear (also "" = linear).
#pragma once

#include <functional>
#include <string>

#include "kiln/trace/tensor.h"

namespace kiln::keras::activations {

using ActivationFn = std::function<Tensor(const Tensor&)>;

Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
/// Along the last axis.
Tensor softmax(const Tensor& x);
/// x * Phi(x) with the exact erf form (Keras's default approximate=False).
Tensor gelu(const Tensor& x);
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

/// The activation named `name`; ConfigError listing the known names otherwise.
ActivationFn get(const std::string& name);

}  // namespace kiln::keras::activations
