// Nadam (Keras defaults: lr 1e-3, beta_1 0.9, beta_2 0.999, epsilon 1e-7), Adam with Nesterov
// momentum and the momentum schedule of Keras 2.11+/3.
#pragma once

#include "kiln/keras/optimizers/optimizer.h"

namespace kiln::keras {

struct NadamOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  std::string name = "Nadam";
};

/// u_t = beta_1 (1 - 0.5 * 0.96^t); u_product *= u_t once per step (starting at 1);
/// m = beta_1 m + (1 - beta_1) g; v = beta_2 v + (1 - beta_2) g^2;
/// m_hat = u_{t+1} m / (1 - u_product u_{t+1}) + (1 - u_t) g / (1 - u_product);
/// w -= lr * m_hat / (sqrt(v / (1 - beta_2^t)) + epsilon).
class Nadam : public Optimizer {
 public:
  explicit Nadam(NadamOptions options = {});
  std::string class_name() const override { return "Nadam"; }
  std::string get_config() const override;
  /// tf.keras's legacy Nadam uses another momentum schedule (0.96^(0.004 t)).
  bool has_keras2_legacy_form() const override { return false; }

 protected:
  void build(const std::vector<Variable>& vars) override;
  void begin_update(const Tensor& local_step) override;
  void update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                   const Tensor& local_step) override;

 private:
  /// beta_1 (1 - 0.5 * 0.96^step): the momentum coefficient at `step`.
  Tensor momentum_at(const Tensor& step) const;

  double beta_1_, beta_2_, epsilon_;
  std::vector<Variable> m_, v_;
  Variable u_product_;
};

}  // namespace kiln::keras
