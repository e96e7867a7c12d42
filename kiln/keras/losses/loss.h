// Loss: per-sample values reduced as Keras does ("sum_over_batch_size" by default, "sum",
// "none"). The concrete losses live in losses.h; LossHandle converts from a loss or a name.
#pragma once

#include <string>

#include "kiln/keras/handle.h"
#include "kiln/trace/tensor.h"

namespace kiln::keras {

class Loss {
 public:
  virtual ~Loss() = default;
  /// The reduced loss of a batch (a scalar unless reduction is "none").
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred) const;
  /// The loss weighted by `sample_weight` (per sample (batch,) or per step (batch, T)) and/or
  /// an output's mask (y_pred's Keras mask, bool (batch, T)); either may be undefined. As in
  /// Keras 2.11+ and 3: the per-sample losses are multiplied by weight * mask;
  /// "sum_over_batch_size" then divides by the number of kept values (all of them without a
  /// mask, so weights are not normalized; 0 when none is kept) and "sum" sums.
  Tensor weighted(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight, const Tensor& mask) const;
  /// Per-sample losses (batch,) before reduction.
  virtual Tensor call(const Tensor& y_true, const Tensor& y_pred) const = 0;
  const std::string& name() const { return name_; }
  const std::string& reduction() const { return reduction_; }
  /// The Keras class name ("SparseCategoricalCrossentropy"); "" for losses that cannot be
  /// rebuilt from a config (saving then records only the name).
  virtual std::string class_name() const { return ""; }
  /// Keras config JSON: {"reduction": ..., "name": ...} plus the subclass's options.
  virtual std::string get_config() const;

 protected:
  Loss(std::string name, std::string reduction);

 private:
  /// call() on y_pred widened to f32 when it is 16-bit.
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const;

  std::string name_, reduction_;
};

/// A loss object or its Keras name: "sparse_categorical_crossentropy", "mse", ...
class LossHandle : public Handle<Loss> {
 public:
  using Handle<Loss>::Handle;
  LossHandle(const char* name);  // NOLINT: implicit on purpose
  LossHandle(const std::string& name) : LossHandle(name.c_str()) {}  // NOLINT
};

}  // namespace kiln::keras
