// RandomImageLayer: the seed and step counter of the random image layers (the scheme of
// Dropout's random_key_impl.h).
#include "kiln/keras/layers/random_image_layer.h"

#include "kiln/keras/layers/conv_utils_impl.h"
#include "kiln/keras/layers/random_key_impl.h"
#include "kiln/trace/ops/elementwise.h"

namespace kiln::keras {

RandomImageLayer::RandomImageLayer(std::optional<uint64_t> seed, std::string name, Dims input_shape,
                                   const std::optional<mixed_precision::Policy>& dtype)
    : Layer(std::move(name), std::move(input_shape), dtype), seed_(seed) {}

void RandomImageLayer::build_weights(const Dims& input_shape) {
  internal::check_image_input(name(), input_shape);
  counter_ = internal::make_seed_state(name());
}

std::vector<Variable> RandomImageLayer::random_state() const {
  const Variable& c = self_as<RandomImageLayer>().counter_;
  return c.defined() ? std::vector<Variable>{c} : std::vector<Variable>{};
}

Tensor RandomImageLayer::next_key() { return internal::next_random_key(counter_, seed_, name()); }

Tensor RandomImageLayer::cast_input(const Tensor& x) const {
  return x.dtype() == compute_dtype() ? x : cast(x, compute_dtype());
}

}  // namespace kiln::keras
