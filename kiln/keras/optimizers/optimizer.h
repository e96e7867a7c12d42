// Optimizer: applies gradients inside the compiled step. Slot variables (m, v, momentum, ...)
// are created at the first apply_gradients; the learning rate is a Variable (so callbacks can
// change it without a retrace) or a schedule evaluated at `iterations`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kiln/keras/handle.h"
#include "kiln/keras/optimizers/gradient_clipping.h"
#include "kiln/keras/optimizers/schedules.h"
#include "kiln/trace/tensor.h"
#include "kiln/trace/variable.h"

namespace kiln::keras {

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  /// var -= update(clip(grad)) for each pair, then iterations += 1 (traced into the step).
  /// Virtual, like the accessors below, so LossScaleOptimizer can wrap another optimizer.
  virtual void apply_gradients(const std::vector<Tensor>& grads, const std::vector<Variable>& vars);
  /// The loss the train step differentiates (Keras 3's optimizer.scale_loss): the loss itself,
  /// or LossScaleOptimizer's loss * scale; apply_gradients undoes the scaling.
  virtual Tensor scale_loss(const Tensor& loss) const { return loss; }
  /// Steps applied so far (i64 scalar).
  virtual const Variable& iterations() const { return iterations_; }
  /// The current learning rate (the schedule's value at iterations, when scheduled).
  virtual double learning_rate() const;
  /// Sets a constant learning rate; ValueError when the optimizer uses a schedule.
  virtual void set_learning_rate(double value);
  const std::string& name() const { return name_; }
  const GradientClipping& clipping() const { return clipping_; }
  /// iterations, the learning-rate variable and every slot.
  virtual std::vector<Variable> variables() const;
  /// Creates the slots for `vars` now, as the first apply_gradients would (no-op once built),
  /// so saved optimizer state can be loaded before training resumes.
  virtual void create_slots(const std::vector<Variable>& vars);
  virtual bool slots_created() const { return built_; }
  /// The Keras class name ("Adam") and config JSON ({"name": ..., "learning_rate": ...}): the
  /// keys of tf.keras 2.x's legacy optimizer_v2 class ("decay": 0) when it has one, else those
  /// of its new optimizer ("is_legacy_optimizer": false, no "decay", which it rejects).
  virtual std::string class_name() const { return name_; }
  virtual std::string get_config() const;
  /// Whether tf.keras 2.11-2.15 has this optimizer as a legacy optimizer_v2 class (Adam, SGD,
  /// ...). Kiln then writes its config and .h5 optimizer_weights in that class's form, so
  /// tf.keras resumes it; otherwise (AdamW, Nadam, Lion) in the new optimizer's form.
  virtual bool has_keras2_legacy_form() const { return true; }

 protected:
  Optimizer(std::string name, const LearningRate& learning_rate, GradientClipping clipping = {});
  /// Creates the slots for `vars` (add_slot).
  virtual void build(const std::vector<Variable>& /*vars*/) {}
  /// Runs once per apply_gradients before the update_step calls, for state shared by every
  /// variable (Nadam's momentum-schedule product). `local_step` is iterations + 1 (f32).
  virtual void begin_update(const Tensor& /*local_step*/) {}
  /// The update of vars[index] for its gradient. `lr` and `local_step` (iterations + 1) are f32
  /// scalars.
  virtual void update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                           const Tensor& local_step) = 0;
  /// A slot shaped like `var` and filled with `initial_value`, named "<optimizer>/<var>/<slot>".
  Variable add_slot(const Variable& var, const std::string& slot, double initial_value = 0.0);
  /// Optimizer state that belongs to no variable, named "<optimizer>/<name>" (saved with the slots).
  Variable add_variable(const std::string& name, const HostTensor& initial);
  /// The config JSON `base_config` (a base class's get_config()) with `fields` added: the
  /// numeric hyperparameters of a subclass.
  static std::string config_with(const std::string& base_config,
                                 const std::vector<std::pair<std::string, double>>& fields);

 private:
  std::string name_;
  std::shared_ptr<LearningRateSchedule> schedule_;
  GradientClipping clipping_;
  Variable learning_rate_, iterations_;
  std::vector<Variable> slots_;
  bool built_ = false;
};

/// An optimizer object or its Keras name ("adam", "nadam", "lion", ...: any class name
/// optimizer_from_config knows, with Keras's defaults).
class OptimizerHandle : public Handle<Optimizer> {
 public:
  using Handle<Optimizer>::Handle;
  OptimizerHandle(const char* name);  // NOLINT: implicit on purpose
  OptimizerHandle(const std::string& name) : OptimizerHandle(name.c_str()) {}  // NOLINT
};

}  // namespace kiln::keras
