// LossScaleOptimizer: dynamic loss scaling for mixed_float16 (keras.optimizers.LossScaleOptimizer).
// float16 gradients of small losses underflow to zero; the train step differentiates
// loss * scale instead, and this optimizer divides the gradients by the scale, skips the step
// when any of them is inf or nan (halving the scale), and doubles the scale after
// dynamic_growth_steps finite steps in a row. All of it is traced into the compiled step.
#pragma once

#include "kiln/keras/optimizers/optimizer.h"

namespace kiln::keras {

struct LossScaleOptimizerOptions {
  /// false: the scale stays initial_scale (steps with inf/nan gradients are still skipped).
  bool dynamic = true;
  double initial_scale = 32768.0;  // 2^15, Keras's default
  int64_t dynamic_growth_steps = 2000;
  std::string name = "loss_scale_optimizer";
};

/// Wraps `inner_optimizer`: iterations, learning rate, slots and its config are the inner
/// optimizer's; the wrapper adds the variables "<name>/dynamic_scale" (f32) and
/// "<name>/step_counter" (i64, finite steps since the scale last changed), named as Keras 3's.
/// A skipped step changes no weight, slot or iteration count.
class LossScaleOptimizer : public Optimizer {
 public:
  explicit LossScaleOptimizer(OptimizerHandle inner_optimizer, LossScaleOptimizerOptions options = {});

  Optimizer& inner_optimizer() const { return *inner_; }
  /// The current scale (f32 scalar) and the count of finite steps since it last changed.
  const Variable& dynamic_scale() const { return dynamic_scale_; }
  const Variable& step_counter() const { return step_counter_; }
  const LossScaleOptimizerOptions& options() const { return options_; }

  Tensor scale_loss(const Tensor& loss) const override;
  void apply_gradients(const std::vector<Tensor>& grads, const std::vector<Variable>& vars) override;
  const Variable& iterations() const override { return inner_->iterations(); }
  double learning_rate() const override { return inner_->learning_rate(); }
  void set_learning_rate(double value) override { inner_->set_learning_rate(value); }
  /// The inner optimizer's variables, then dynamic_scale and step_counter.
  std::vector<Variable> variables() const override;
  void create_slots(const std::vector<Variable>& vars) override { inner_->create_slots(vars); }
  bool slots_created() const override { return inner_->slots_created(); }
  std::string class_name() const override { return "LossScaleOptimizer"; }
  /// Keras's config: {"name", "inner_optimizer": {"class_name", "config"}, "dynamic",
  /// "initial_scale", "dynamic_growth_steps"}.
  std::string get_config() const override;
  bool has_keras2_legacy_form() const override { return false; }

 protected:
  void update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                   const Tensor& local_step) override;

 private:
  OptimizerHandle inner_;
  LossScaleOptimizerOptions options_;
  Variable dynamic_scale_, step_counter_;
};

}  // namespace kiln::keras
