// Lion, "EvoLved Sign Momentum" (Keras defaults: lr 1e-4, beta_1 0.9, beta_2 0.99).
#pragma once

#include <optional>

#include "kiln/keras/optimizers/optimizer.h"

namespace kiln::keras {

struct LionOptions {
  LearningRate learning_rate = 0.0001;
  double beta_1 = 0.9;
  double beta_2 = 0.99;
  std::string name = "Lion";
  /// Gradient clipping (GradientClipping): at most one of the norm clips, each > 0.
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
};

/// w -= lr * sign(beta_1 m + (1 - beta_1) g); m = beta_2 m + (1 - beta_2) g.
/// ValueError unless 0 < beta_1 <= 1 (beta_1 = 0 is signSGD).
class Lion : public Optimizer {
 public:
  explicit Lion(LionOptions options = {});
  std::string class_name() const override { return "Lion"; }
  std::string get_config() const override;
  /// tf.keras has Lion only among its new optimizers.
  bool has_keras2_legacy_form() const override { return false; }

 protected:
  void build(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                   const Tensor& local_step) override;

 private:
  double beta_1_, beta_2_;
  std::vector<Variable> m_;
};

}  // namespace kiln::keras
