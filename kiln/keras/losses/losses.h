// The Keras losses of the seed and its neighbours. Each takes y_true and y_pred batch first;
// labels convert to the prediction's dtype where the formula needs it.
#pragma once

#include "kiln/keras/losses/loss.h"

namespace kiln::keras {

struct CrossentropyOptions {
  bool from_logits = false;
  std::string reduction = "sum_over_batch_size";
  std::string name = "";
};

/// y_true: integer class ids (batch,); y_pred: (batch, classes) probabilities or logits.
class SparseCategoricalCrossentropy : public Loss {
 public:
  explicit SparseCategoricalCrossentropy(CrossentropyOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "SparseCategoricalCrossentropy"; }
  std::string get_config() const override;
  bool from_logits() const { return from_logits_; }

 private:
  bool from_logits_;
};

/// y_true: one-hot (batch, classes); y_pred: (batch, classes).
class CategoricalCrossentropy : public Loss {
 public:
  explicit CategoricalCrossentropy(CrossentropyOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "CategoricalCrossentropy"; }
  std::string get_config() const override;

 private:
  bool from_logits_;
};

/// Mean over the last axis of the elementwise binary crossentropy.
class BinaryCrossentropy : public Loss {
 public:
  explicit BinaryCrossentropy(CrossentropyOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "BinaryCrossentropy"; }
  std::string get_config() const override;

 private:
  bool from_logits_;
};

struct MeanSquaredErrorOptions {
  std::string reduction = "sum_over_batch_size";
  std::string name = "mean_squared_error";
};

/// Mean over the last axis of (y_true - y_pred)^2.
class MeanSquaredError : public Loss {
 public:
  explicit MeanSquaredError(MeanSquaredErrorOptions options = {})
      : Loss(options.name, options.reduction) {}
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "MeanSquaredError"; }
};

}  // namespace kiln::keras
