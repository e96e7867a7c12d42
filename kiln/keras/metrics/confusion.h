// Metrics over confusion counts at thresholds: Precision, Recall and AUC (ROC and PR, with
// Keras's interpolation). Counts are state variables summed across replicas on read.
#pragma once

#include "kiln/keras/metrics/metric.h"

namespace kiln::keras::metrics {

/// tp / (tp + misses) of predictions above each threshold (each in [0, 1]); 0 before any. As
/// in Keras, result() is a scalar for one threshold and one value per threshold for several;
/// Model's logs then hold "<name>_0", "<name>_1", ... (Kiln's logs hold scalars).
class ThresholdedRatio : public Metric {
 public:
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  /// Each value counts with its weight (broadcast to y_pred's shape), as Keras's
  /// update_confusion_matrix_variables accumulates sample weights into the counts.
  void update_state_weighted(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
  Tensor result() const override;
  const std::vector<double>& thresholds() const { return thresholds_; }
  /// Keras's {"name", "dtype", "thresholds" (a number for one), "top_k": null, "class_id": null}.
  std::string get_config() const override;

 protected:
  ThresholdedRatio(std::vector<double> thresholds, std::string name, const std::string& misses_name);
  /// Per sample and threshold, what the denominator adds besides the true positives: false
  /// positives (Precision) or false negatives (Recall). `predicted` is 1 above the threshold.
  virtual Tensor misses(const Tensor& y, const Tensor& predicted) const = 0;

 private:
  /// Adds the counts of a batch; `weights` (n, 1) or undefined (each value counts 1).
  void accumulate(const Tensor& y_true, const Tensor& y_pred, const Tensor& weights);

  std::vector<double> thresholds_;
  Variable true_positives_, misses_;
};

/// tp / (tp + fp) (Keras's default threshold 0.5).
class Precision : public ThresholdedRatio {
 public:
  explicit Precision(double threshold = 0.5, std::string name = "precision")
      : Precision(std::vector<double>{threshold}, std::move(name)) {}
  Precision(std::vector<double> thresholds, std::string name);
  std::string class_name() const override { return "Precision"; }

 protected:
  Tensor misses(const Tensor& y, const Tensor& predicted) const override;
};

/// tp / (tp + fn).
class Recall : public ThresholdedRatio {
 public:
  explicit Recall(double threshold = 0.5, std::string name = "recall")
      : Recall(std::vector<double>{threshold}, std::move(name)) {}
  Recall(std::vector<double> thresholds, std::string name);
  std::string class_name() const override { return "Recall"; }

 protected:
  Tensor misses(const Tensor& y, const Tensor& predicted) const override;
};

struct AucOptions {
  int num_thresholds = 200;
  std::string curve = "ROC";  // or "PR"
  std::string name = "auc";
};

/// Area under the ROC or PR curve from counts at num_thresholds thresholds spread evenly over
/// [0, 1] (the first just below 0, the last just above 1), summed with Keras's
/// "interpolation" method: trapezoids for ROC, Davis & Goadrich's interpolation for PR.
class AUC : public Metric {
 public:
  explicit AUC(AucOptions options = {});
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  /// The four counts at every threshold accumulate each value's weight.
  void update_state_weighted(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
  Tensor result() const override;
  const std::vector<double>& thresholds() const { return thresholds_; }
  std::string class_name() const override { return "AUC"; }
  /// Keras's {"name", "dtype", "num_thresholds", "curve", "summation_method":
  /// "interpolation", "multi_label": false, ...} without the thresholds list (even spacing).
  std::string get_config() const override;

 private:
  void accumulate(const Tensor& y_true, const Tensor& y_pred, const Tensor& weights);

  std::string curve_;
  std::vector<double> thresholds_;
  Variable tp_, fp_, tn_, fn_;
};

}  // namespace kiln::keras::metrics
