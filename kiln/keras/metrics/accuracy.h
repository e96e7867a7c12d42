// Accuracy metrics, and "accuracy" resolved as Keras resolves it: from the shapes of y_true
// and y_pred at the first update (binary when y_pred's last dim is 1, sparse categorical when
// y_true has lower rank or a last dim of 1, categorical otherwise). With logits argmax is
// unchanged, so the sparse/categorical forms are right for from_logits models too.
#pragma once

#include "kiln/keras/metrics/metric.h"

namespace kiln::keras {

/// argmax(y_pred) == y_true (integer labels).
class SparseCategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit SparseCategoricalAccuracy(std::string name = "sparse_categorical_accuracy");
};

/// argmax(y_pred) == argmax(y_true) (one-hot labels).
class CategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit CategoricalAccuracy(std::string name = "categorical_accuracy");
};

/// (y_pred > threshold) == y_true.
class BinaryAccuracy : public MeanMetricWrapper {
 public:
  explicit BinaryAccuracy(std::string name = "binary_accuracy", double threshold = 0.5);
  double threshold() const { return threshold_; }
  std::string class_name() const override { return "BinaryAccuracy"; }
  /// Adds "threshold".
  std::string get_config() const override;

 private:
  double threshold_;
};

/// "accuracy": picks one of the three above on its first update.
class Accuracy : public MeanMetricWrapper {
 public:
  explicit Accuracy(std::string name = "accuracy");
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  void update_state_weighted(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  void resolve(const Tensor& y_true, const Tensor& y_pred);
};

/// Per-sample accuracy values (f32 0/1) for each form.
Tensor sparse_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred);
Tensor categorical_accuracy(const Tensor& y_true, const Tensor& y_pred);
Tensor binary_accuracy(const Tensor& y_true, const Tensor& y_pred, double threshold = 0.5);

}  // namespace kiln::keras
