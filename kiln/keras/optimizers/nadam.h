// Nadam (Keras defaults: lr 1e-3, beta_1 0.9, beta_2 0.999, epsilon 1e-7), Adam with Nesterov
// momentum and the momentum schedule of Keras 2.11+/3, or (with schedule_decay) the legacy
// schedule of Keras 2.0-2.3 and tf.keras optimizer_v2 (<= 2.10, keras.optimizers.legacy.Nadam).
#pragma once

#include <optional>

#include "kiln/keras/optimizers/optimizer.h"

namespace kiln::keras {

struct NadamOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  std::string name = "Nadam";
  /// Set: the legacy Nadam of Keras 2.0-2.3 (`schedule_decay`, default 0.004) and tf.keras's
  /// optimizer_v2 (its config's `decay`), whose momentum schedule is
  /// u_t = beta_1 (1 - 0.5 * 0.96^(schedule_decay * t)). Unset: Keras 2.11+/3's 0.96^t (the
  /// same update with schedule_decay 1). The legacy form takes no LearningRateSchedule (as
  /// in Keras), is saved in .h5 files as optimizer_v2's Nadam, and has no Keras 3 form.
  std::optional<double> schedule_decay;
  /// Gradient clipping (GradientClipping): at most one of the norm clips, each > 0.
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
};

/// Keras 2's legacy default schedule_decay.
inline constexpr double kNadamLegacyScheduleDecay = 0.004;

/// u_t = beta_1 (1 - 0.5 * 0.96^(s t)) with s = schedule_decay (1 unless legacy);
/// u_product *= u_t once per step (starting at 1; Keras 2's m_schedule / momentum_cache);
/// m = beta_1 m + (1 - beta_1) g; v = beta_2 v + (1 - beta_2) g^2;
/// m_hat = u_{t+1} m / (1 - u_product u_{t+1}) + (1 - u_t) g / (1 - u_product);
/// w -= lr * m_hat / (sqrt(v / (1 - beta_2^t)) + epsilon).
class Nadam : public Optimizer {
 public:
  explicit Nadam(NadamOptions options = {});
  std::string class_name() const override { return "Nadam"; }
  /// Keras 2.11+/3's keys ("is_legacy_optimizer": false); legacy: optimizer_v2's, with the
  /// schedule decay as "decay".
  std::string get_config() const override;
  /// Only the legacy Nadam: tf.keras 2.11+'s own Nadam has the 0.96^t schedule.
  bool has_keras2_legacy_form() const override { return schedule_decay_.has_value(); }
  /// The legacy schedule decay; unset for Keras 2.11+/3's Nadam.
  std::optional<double> schedule_decay() const { return schedule_decay_; }
  /// The momentum-schedule product after `steps` updates, u_1 u_2 ... u_steps (f32, as the
  /// step computes it): the state that files without it (Keras 2.0-2.2's, tf.keras 2.11-2.15's
  /// new Nadam) imply, since it depends on the step count alone.
  float u_product_after(int64_t steps) const;

 protected:
  void build(const std::vector<Variable>& vars) override;
  void begin_update(const Tensor& local_step) override;
  void update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                   const Tensor& local_step) override;

 private:
  /// beta_1 (1 - 0.5 * 0.96^(s step)): the momentum coefficient at `step`.
  Tensor momentum_at(const Tensor& step) const;

  double beta_1_, beta_2_, epsilon_;
  std::optional<double> schedule_decay_;
  std::vector<Variable> m_, v_;
  Variable u_product_;
};

}  // namespace kiln::keras
