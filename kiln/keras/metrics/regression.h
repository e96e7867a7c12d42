// Regression and ranking metrics: the mean errors, RootMeanSquaredError, and the top-k
// accuracies. Each is a running mean over samples, updated inside the compiled step. They
// live in keras::metrics, as in Keras, since losses of the same names exist.
#pragma once

#include "kiln/keras/metrics/metric.h"

namespace kiln::keras::metrics {

/// `metric`'s base config with "k" (the top-k accuracies).
std::string config_with_k(const Metric& metric, int k);

class MeanAbsoluteError : public MeanMetricWrapper {
 public:
  explicit MeanAbsoluteError(std::string name = "mean_absolute_error");
};

class MeanSquaredError : public MeanMetricWrapper {
 public:
  explicit MeanSquaredError(std::string name = "mean_squared_error");
};

/// sqrt(total squared error / count): the root of the running mean, as Keras computes it (not
/// the mean of per-batch roots).
class RootMeanSquaredError : public MeanMetricWrapper {
 public:
  explicit RootMeanSquaredError(std::string name = "root_mean_squared_error");
  Tensor result() const override;
};

/// Whether the true class (one-hot y_true) scores among the k highest; classes tied with the
/// k-th count as inside, as tf.math.in_top_k does.
class TopKCategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit TopKCategoricalAccuracy(int k = 5, std::string name = "top_k_categorical_accuracy");
  std::string class_name() const override { return "TopKCategoricalAccuracy"; }
  /// Adds "k".
  std::string get_config() const override { return config_with_k(*this, k_); }

 private:
  int k_;
};

/// The same with integer labels.
class SparseTopKCategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit SparseTopKCategoricalAccuracy(int k = 5, std::string name = "sparse_top_k_categorical_accuracy");
  std::string class_name() const override { return "SparseTopKCategoricalAccuracy"; }
  std::string get_config() const override { return config_with_k(*this, k_); }

 private:
  int k_;
};

/// Per-sample values: 1 where the label's score has fewer than k scores above it.
Tensor sparse_top_k_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, int k);

}  // namespace kiln::keras::metrics
