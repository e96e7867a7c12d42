// Gradient clipping shared by every optimizer (Keras's clipnorm, clipvalue, global_clipnorm),
// applied in the compiled step to the gradients after they are averaged over the replicas.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/trace/tensor.h"

namespace kiln::keras {

/// At most one norm clip; unset fields are off. Keras 3 applies only one of the three
/// (clipnorm, else global_clipnorm, else clipvalue) while tf.keras's legacy optimizers apply
/// clipvalue and then clipnorm, so Kiln refuses clipvalue with a norm clip instead of picking
/// one of those behaviours silently.
struct GradientClipping {
  /// Each gradient g becomes g * clipnorm / max(||g||_2, clipnorm) (tf.clip_by_norm).
  std::optional<double> clipnorm;
  /// Each gradient element is clipped to [-clipvalue, clipvalue].
  std::optional<double> clipvalue;
  /// Every gradient is scaled by global_clipnorm / max(sqrt(sum_i ||g_i||^2), global_clipnorm)
  /// (tf.clip_by_global_norm).
  std::optional<double> global_clipnorm;

  bool any() const { return clipnorm || clipvalue || global_clipnorm; }
  /// ValueError naming `where` for a value <= 0 or a combination Kiln refuses.
  void validate(const std::string& where) const;
  /// The clipped gradients (traced ops; `grads` unchanged when nothing is set).
  std::vector<Tensor> apply(std::vector<Tensor> grads) const;
};

/// The clipping fields of an optimizer's options struct (each has clipnorm, clipvalue and
/// global_clipnorm, so they read as Keras keyword arguments: SGD({.clipnorm = 1.0})).
template <class Options>
GradientClipping clipping_of(const Options& options) {
  return {.clipnorm = options.clipnorm, .clipvalue = options.clipvalue, .global_clipnorm = options.global_clipnorm};
}

}  // namespace kiln::keras
