// Metric: state Variables updated inside the compiled step (update_state), read by result()
// and zeroed by reset_state() between epochs. Mean and MeanMetricWrapper cover most Keras
// metrics; user metrics subclass Metric or wrap a per-sample function.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/keras/handle.h"
#include "kiln/trace/tensor.h"
#include "kiln/trace/variable.h"

namespace kiln::keras {

class Metric {
 public:
  virtual ~Metric() = default;
  /// Accumulates a batch (traced into the step).
  virtual void update_state(const Tensor& y_true, const Tensor& y_pred) = 0;
  /// The same with per-value weights broadcast against the metric's per-sample values
  /// (Keras's update_state(..., sample_weight); fit passes the output's mask, as Keras does).
  /// Every built-in metric weighs (the means, and the confusion counts of Precision, Recall
  /// and AUC); the default, for a Metric subclass that does not override it, is a ValueError.
  virtual void update_state_weighted(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight);
  /// The current value (a scalar tensor).
  virtual Tensor result() const = 0;
  /// Zeroes every state variable (outside a trace: immediately).
  virtual void reset_state();
  const std::string& name() const { return name_; }
  const std::vector<Variable>& variables() const { return variables_; }
  /// Keras's class name for a metric saved as an object with its config (Precision, AUC,
  /// ...); empty for one saved by its name ("accuracy", "mae"), as Keras 2 saves those.
  virtual std::string class_name() const { return ""; }
  /// Keras's config JSON: {"name", "dtype": "float32"} and the metric's options.
  virtual std::string get_config() const;

 protected:
  explicit Metric(std::string name) : name_(std::move(name)) {}
  /// An f32 state variable "<metric>/<name>" (a scalar unless `dims` say otherwise),
  /// zero-initialized, non-trainable, summed across replicas on read.
  Variable add_variable(const std::string& name, Dims dims = {});

 private:
  std::string name_;
  std::vector<Variable> variables_;
};

/// The running mean of the values given to update (Keras metrics.Mean).
class Mean : public Metric {
 public:
  explicit Mean(std::string name = "mean");
  /// Adds sum(values) to total and their count to count.
  void update(const Tensor& values);
  /// The same with every value weighted by `sample_weight`: sum(values) * w and count * w
  /// (Keras's update_state(values, sample_weight) with a scalar weight).
  void update(const Tensor& values, double sample_weight);
  /// sum(values * w) and sum(w), `sample_weight` broadcast to the values' shape (Keras's
  /// Reduce metric with a weight tensor).
  void update(const Tensor& values, const Tensor& sample_weight);
  void update_state_weighted(const Tensor& /*y_true*/, const Tensor& y_pred, const Tensor& sample_weight) override {
    update(y_pred, sample_weight);
  }
  void update_state(const Tensor& /*y_true*/, const Tensor& y_pred) override { update(y_pred); }
  Tensor result() const override;

 private:
  Variable total_, count_;
};

/// The mean over all samples of fn(y_true, y_pred) (per-sample values): Keras
/// MeanMetricWrapper, the base of the accuracy metrics and of user metrics.
class MeanMetricWrapper : public Mean {
 public:
  using Fn = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred)>;
  MeanMetricWrapper(std::string name, Fn fn) : Mean(std::move(name)), fn_(std::move(fn)) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred) override { update(fn_(y_true, y_pred)); }
  void update_state_weighted(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override {
    update(fn_(y_true, y_pred), sample_weight);
  }

 protected:
  Fn fn_;
};

/// A metric object or its Keras name ("accuracy", "sparse_categorical_accuracy", ...).
class MetricHandle : public Handle<Metric> {
 public:
  using Handle<Metric>::Handle;
  MetricHandle(const char* name);  // NOLINT: implicit on purpose
  MetricHandle(const std::string& name) : MetricHandle(name.c_str()) {}  // NOLINT
};

}  // namespace kiln::keras
