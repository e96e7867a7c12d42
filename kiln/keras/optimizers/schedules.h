// Learning-rate schedules (keras.optimizers.schedules), evaluated inside the compiled step
// from the optimizer's iterations counter; also callable eagerly on a concrete step.
#pragma once

#include <concepts>
#include <memory>
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
};

/// initial * decay_rate ^ (step / decay_steps), the exponent floored when staircase.
class ExponentialDecay : public LearningRateSchedule {
 public:
  ExponentialDecay(double initial_learning_rate, int64_t decay_steps, double decay_rate, bool staircase = false);
  Tensor operator()(const Tensor& step) const override;

 private:
  double initial_, decay_rate_;
  int64_t decay_steps_;
  bool staircase_;
};

/// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i],
/// values.back() after the last boundary.
class PiecewiseConstantDecay : public LearningRateSchedule {
 public:
  PiecewiseConstantDecay(std::vector<double> boundaries, std::vector<double> values);
  Tensor operator()(const Tensor& step) const override;

 private:
  std::vector<double> boundaries_, values_;
};

/// initial * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha).
class CosineDecay : public LearningRateSchedule {
 public:
  CosineDecay(double initial_learning_rate, int64_t decay_steps, double alpha = 0.0);
  Tensor operator()(const Tensor& step) const override;

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

}  // namespace kiln::keras
