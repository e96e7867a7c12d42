// Activations as compositions of trace ops.
#include "kiln/keras/activations.h"

#include <cmath>

#include "kiln/core/check.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"

namespace kiln::keras::activations {

Tensor relu(const Tensor& x) { return kiln::relu(x); }
Tensor sigmoid(const Tensor& x) { return kiln::sigmoid(x); }
Tensor tanh(const Tensor& x) { return kiln::tanh(x); }
// A 16-bit input is normalized in f32 (exp and the row sum lose too much in bf16) and the
// result returned in the input's dtype, as the layer's compute dtype asks.
Tensor softmax(const Tensor& x) {
  if (size_of(x.dtype()) != 2) return kiln::softmax(x, -1);
  return cast(kiln::softmax(cast(x, DType::kF32), -1), x.dtype());
}
// gelu(x) = 0.5 x (1 + erf(x / sqrt(2))); approximate: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
Tensor gelu(const Tensor& x, bool approximate) {
  if (!approximate) return 0.5 * x * (1.0 + erf(x * M_SQRT1_2));
  constexpr double kSqrt2OverPi = 0.7978845608028654;
  return 0.5 * x * (1.0 + kiln::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
}
Tensor linear(const Tensor& x) { return x; }
// elu(x) = x if x > 0 else exp(x) - 1 (alpha 1, Keras's activation function default)
Tensor elu(const Tensor& x) { return where(greater(x, 0.0), x, exp(x) - 1.0); }
// selu(x) = scale * elu_alpha(x) with Keras's constants
Tensor selu(const Tensor& x) {
  constexpr double kAlpha = 1.6732632423543772848170429916717, kScale = 1.0507009873554804934193349852946;
  return kScale * where(greater(x, 0.0), x, kAlpha * (exp(x) - 1.0));
}
// softplus(x) = log(1 + exp(x)), written stably as max(x, 0) + log(1 + exp(-|x|))
Tensor softplus(const Tensor& x) { return maximum(x, 0.0) + log(1.0 + exp(-abs(x))); }
// softsign(x) = x / (1 + |x|)
Tensor softsign(const Tensor& x) { return x / (1.0 + abs(x)); }
// swish(x) = silu(x) = x * sigmoid(x)
Tensor swish(const Tensor& x) { return x * kiln::sigmoid(x); }
Tensor exponential(const Tensor& x) { return exp(x); }
// hard_sigmoid(x) = clip(0.2 x + 0.5, 0, 1) (Keras 2's slope; Keras 3 uses x / 6 + 0.5)
Tensor hard_sigmoid(const Tensor& x) { return minimum(maximum(0.2 * x + 0.5, 0.0), 1.0); }

// Keras 3's hard_sigmoid(x) = relu6(x + 3) / 6 = clip(x / 6 + 0.5, 0, 1). Kiln calls it
// "keras3_hard_sigmoid": its "hard_sigmoid" is Keras 2's, which .h5 files mean; the .keras
// reader and writer translate the name (keras3_config_reader.cpp, keras3_config.cpp).
Tensor keras3_hard_sigmoid(const Tensor& x) { return minimum(maximum(x / 6.0 + 0.5, 0.0), 1.0); }

// leaky_relu(x) = x if x >= 0 else slope * x
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return where(greater_equal(x, 0.0), x, negative_slope * x);
}
// relu6(x) = min(max(x, 0), 6)
Tensor relu6(const Tensor& x) { return minimum(maximum(x, 0.0), 6.0); }

ActivationFn get(const std::string& name) {
  if (name == "relu") return relu;
  if (name == "sigmoid") return sigmoid;
  if (name == "tanh") return activations::tanh;
  if (name == "softmax") return softmax;
  if (name == "gelu") return [](const Tensor& x) { return gelu(x); };
  if (name == "linear" || name.empty()) return linear;
  if (name == "elu") return elu;
  if (name == "selu") return selu;
  if (name == "softplus") return softplus;
  if (name == "softsign") return softsign;
  if (name == "swish" || name == "silu") return swish;
  if (name == "exponential") return exponential;
  if (name == "hard_sigmoid") return hard_sigmoid;
  if (name == "keras3_hard_sigmoid") return keras3_hard_sigmoid;
  if (name == "leaky_relu") return [](const Tensor& x) { return leaky_relu(x); };
  if (name == "relu6") return relu6;
  KILN_THROW(ConfigError, "[activations] unknown activation '", name,
             "'. Hint: use relu, sigmoid, tanh, softmax, gelu, elu, selu, softplus, softsign, swish, exponential, "
             "hard_sigmoid (Keras 2's), keras3_hard_sigmoid, leaky_relu, relu6 or linear.");
}

}  // namespace kiln::keras::activations

namespace kiln::keras {

void ActivationArg::check() const {
  if (!fn_) activations::get(name_);
}

Tensor ActivationArg::operator()(const Tensor& x) const { return fn_ ? fn_(x) : activations::get(name_)(x); }

std::string ActivationArg::config_name(const std::string& layer) const {
  if (fn_)
    KILN_THROW(ConfigError, "[", layer.empty() ? "layer" : layer, "] its activation is a C++ callable, which has no "
               "Keras config, so the layer cannot be saved or serialized. Hint: use a named activation (\"relu\", "
               "\"gelu\", ...) or an Activation layer, or save the weights only (save_weights).");
  return name_.empty() ? "linear" : name_;
}

}  // namespace kiln::keras
