// Learning-rate schedules (keras.optimizers.schedules), evaluated inside the compiled step
// from the optimizer's iterations counter; also callable eagerly on a concrete step.
#pragma once

#include <concepts>
#include <memory>
#include <string>
#include <vector>

#include "kiln/trace/tensor.h"

namespace kiln::keras {

class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  /// The learning rate (f32 scalar) at `step` (f32 scalar, the optimizer's iterations).
  virtual Tensor operator()(const Tensor& step) const = 0;
  /// Eager convenience: the rate at an integer step.
  double at(int64_t step) const;
  /// Keras's class name ("ExponentialDecay") and config JSON, as saved in an optimizer's
  /// learning_rate ({"class_name": ..., "config": ...}).
  virtual std::string class_name() const = 0;
  virtual std::string get_config() const = 0;
};

/// The shared form of ExponentialDecay and InverseTimeDecay: a rate applied over
/// step / decay_steps, floored when staircase.
class StepDecay : public LearningRateSchedule {
 public:
  std::string get_config() const override;

 protected:
  StepDecay(const char* name, double initial_learning_rate, int64_t decay_steps, double decay_rate, bool staircase);
  /// step / decay_steps, floored when staircase.
  Tensor progress(const Tensor& step) const;
  double initial_, decay_rate_;
  int64_t decay_steps_;
  bool staircase_;
};

/// initial * decay_rate ^ (step / decay_steps), the exponent floored when staircase.
class ExponentialDecay : public StepDecay {
 public:
  ExponentialDecay(double initial_learning_rate, int64_t decay_steps, double decay_rate, bool staircase = false)
      : StepDecay("ExponentialDecay", initial_learning_rate, decay_steps, decay_rate, staircase) {}
  Tensor operator()(const Tensor& step) const override;
  std::string class_name() const override { return "ExponentialDecay"; }
};

/// initial / (1 + decay_rate * step / decay_steps), the quotient floored when staircase. Keras
/// 2's optimizer `decay` argument is this with decay_steps 1 (lr / (1 + decay * iterations)).
class InverseTimeDecay : public StepDecay {
 public:
  InverseTimeDecay(double initial_learning_rate, int64_t decay_steps, double decay_rate, bool staircase = false)
      : StepDecay("InverseTimeDecay", initial_learning_rate, decay_steps, decay_rate, staircase) {}
  Tensor operator()(const Tensor& step) const override;
  std::string class_name() const override { return "InverseTimeDecay"; }
};

/// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i],
/// values.back() after the last boundary.
class PiecewiseConstantDecay : public LearningRateSchedule {
 public:
  PiecewiseConstantDecay(std::vector<double> boundaries, std::vector<double> values);
  Tensor operator()(const Tensor& step) const override;
  std::string class_name() const override { return "PiecewiseConstantDecay"; }
  std::string get_config() const override;

 private:
  std::vector<double> boundaries_, values_;
};

/// initial * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha).
class CosineDecay : public LearningRateSchedule {
 public:
  CosineDecay(double initial_learning_rate, int64_t decay_steps, double alpha = 0.0);
  Tensor operator()(const Tensor& step) const override;
  std::string class_name() const override { return "CosineDecay"; }
  std::string get_config() const override;

 private:
  double initial_, alpha_;
  int64_t decay_steps_;
};

/// A constant or a schedule: `.learning_rate = 1e-3` or `.learning_rate = CosineDecay(...)`.
struct LearningRate {
  LearningRate(double value) : constant(value) {}  // NOLINT: implicit on purpose
  template <typename S>
    requires std::derived_from<S, LearningRateSchedule>
  LearningRate(S schedule_value) : schedule(std::make_shared<S>(std::move(schedule_value))) {}  // NOLINT
  double constant = 0.0;
  std::shared_ptr<LearningRateSchedule> schedule;
};

/// The learning_rate entry of a Keras optimizer config: a number, or a serialized schedule
/// ({"class_name": "ExponentialDecay", "config": {...}}, as tf.keras 2.x writes it).
/// ConfigError naming the class for a schedule Kiln does not have.
LearningRate learning_rate_from_config(const std::string& json);
/// The inverse: a number for a constant, the serialized schedule otherwise.
std::string learning_rate_to_config(const LearningRate& learning_rate);

}  // namespace kiln::keras
