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
Tensor softmax(const Tensor& x) { return kiln::softmax(x, -1); }
// gelu(x) = 0.5 x (1 + erf(x / sqrt(2)))
Tensor gelu(const Tensor& x) { return 0.5 * x * (1.0 + erf(x * M_SQRT1_2)); }
Tensor linear(const Tensor& x) { return x; }

ActivationFn get(const std::string& name) {
  if (name == "relu") return relu;
  if (name == "sigmoid") return sigmoid;
  if (name == "tanh") return activations::tanh;
  if (name == "softmax") return softmax;
  if (name == "gelu") return gelu;
  if (name == "linear" || name.empty()) return linear;
  KILN_THROW(ConfigError, "[activations] unknown activation '", name,
             "'. Hint: use relu, sigmoid, tanh, softmax, gelu or linear.");
}

}  // namespace kiln::keras::activations
