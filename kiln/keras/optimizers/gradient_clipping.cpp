// Gradient clipping: the formulas of tf.clip_by_norm, tf.clip_by_global_norm and
// tf.clip_by_value, as traced ops computed in f32.
#include "kiln/keras/optimizers/gradient_clipping.h"

#include "kiln/core/check.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"

namespace kiln::keras {
namespace {

Tensor squared_norm(const Tensor& g) {
  const Tensor g32 = cast(g, DType::kF32);
  return reduce_sum(g32 * g32);
}

// g * limit / max(norm, limit): g itself while norm <= limit, else g rescaled to norm `limit`.
Tensor scale_to(const Tensor& g, const Tensor& norm, double limit) {
  return g * cast(limit / maximum(norm, limit), g.dtype());
}

}  // namespace

void GradientClipping::validate(const std::string& where) const {
  for (const auto& [key, value] : {std::pair{"clipnorm", clipnorm}, std::pair{"clipvalue", clipvalue},
                                   std::pair{"global_clipnorm", global_clipnorm}})
    if (value && !(*value > 0))
      KILN_THROW(ValueError, "[", where, "] expected ", key, " > 0, received ", key, "=", *value,
                 ". Hint: leave it unset to turn clipping off.");
  if (clipnorm && global_clipnorm)
    KILN_THROW(ValueError, "[", where, "] only one of clipnorm and global_clipnorm can be set, received clipnorm=",
               *clipnorm, ", global_clipnorm=", *global_clipnorm, ".");
  if (clipvalue && (clipnorm || global_clipnorm))
    KILN_THROW(ValueError, "[", where, "] clipvalue=", *clipvalue, " together with ",
               clipnorm ? "clipnorm" : "global_clipnorm",
               ": Keras 3 would apply only the norm clip and tf.keras's legacy optimizers both, so Kiln "
               "takes one of them. Hint: keep one setting.");
}

std::vector<Tensor> GradientClipping::apply(std::vector<Tensor> grads) const {
  if (clipnorm) {
    for (Tensor& g : grads) g = scale_to(g, sqrt(squared_norm(g)), *clipnorm);
  } else if (global_clipnorm) {
    Tensor total = Tensor::scalar(0.0);
    for (const Tensor& g : grads) total = total + squared_norm(g);
    const Tensor norm = sqrt(total);
    for (Tensor& g : grads) g = scale_to(g, norm, *global_clipnorm);
  } else if (clipvalue) {
    for (Tensor& g : grads) g = minimum(maximum(g, -*clipvalue), *clipvalue);
  }
  return grads;
}

}  // namespace kiln::keras
