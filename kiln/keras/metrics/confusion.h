// Metrics over confusion counts at thresholds: Precision, Recall and AUC (ROC and PR, with
// Keras's interpolation). Counts are state variables summed across replicas on read.
#pragma once

#include "kiln/keras/metrics/metric.h"

namespace kiln::keras::metrics {

/// tp / (tp + fp) of predictions above `threshold` (Keras's default 0.5); 0 before any.
class Precision : public Metric {
 public:
  explicit Precision(double threshold = 0.5, std::string name = "precision");
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  Tensor result() const override;

 private:
  double threshold_;
  Variable true_positives_, false_positives_;
};

/// tp / (tp + fn) of predictions above `threshold`; 0 before any.
class Recall : public Metric {
 public:
  explicit Recall(double threshold = 0.5, std::string name = "recall");
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  Tensor result() const override;

 private:
  double threshold_;
  Variable true_positives_, false_negatives_;
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
  Tensor result() const override;
  const std::vector<double>& thresholds() const { return thresholds_; }

 private:
  std::string curve_;
  std::vector<double> thresholds_;
  Variable tp_, fp_, tn_, fn_;
};

}  // namespace kiln::keras::metrics
