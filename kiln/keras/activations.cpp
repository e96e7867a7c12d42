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
// gelu(x) = 0.5 x (1 + erf(x / sqrt(2)))
Tensor gelu(const Tensor& x) { return 0.5 * x * (1.0 + erf(x * M_SQRT1_2)); }
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

ActivationFn get(const std::string& name) {
  if (name == "relu") return relu;
  if (name == "sigmoid") return sigmoid;
  if (name == "tanh") return activations::tanh;
  if (name == "softmax") return softmax;
  if (name == "gelu") return gelu;
  if (name == "linear" || name.empty()) return linear;
  if (name == "elu") return elu;
  if (name == "selu") return selu;
  if (name == "softplus") return softplus;
  if (name == "softsign") return softsign;
  if (name == "swish" || name == "silu") return swish;
  if (name == "exponential") return exponential;
  if (name == "hard_sigmoid") return hard_sigmoid;
  KILN_THROW(ConfigError, "[activations] unknown activation '", name,
             "'. Hint: use relu, sigmoid, tanh, softmax, gelu, elu, selu, softplus, softsign, swish, exponential, "
             "hard_sigmoid or linear.");
}

}  // namespace kiln::keras::activations
