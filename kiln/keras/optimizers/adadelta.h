// Adadelta (Keras defaults: lr 1e-3, rho 0.95, epsilon 1e-7).
#pragma once

#include <optional>

#include "kiln/keras/optimizers/optimizer.h"

namespace kiln::keras {

struct AdadeltaOptions {
  LearningRate learning_rate = 0.001;
  double rho = 0.95;
  double epsilon = 1e-7;
  std::string name = "Adadelta";
  /// Gradient clipping (GradientClipping): at most one of the norm clips, each > 0.
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
};

/// accumulated_grad = rho ag + (1 - rho) g^2;
/// delta = -sqrt(accumulated_delta_var + epsilon) / sqrt(ag + epsilon) * g;
/// accumulated_delta_var = rho adv + (1 - rho) delta^2; w += lr * delta.
class Adadelta : public Optimizer {
 public:
  explicit Adadelta(AdadeltaOptions options = {});
  std::string class_name() const override { return "Adadelta"; }
  std::string get_config() const override;

 protected:
  void build(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                   const Tensor& local_step) override;

 private:
  double rho_, epsilon_;
  std::vector<Variable> accumulated_grad_, accumulated_delta_var_;
};

}  // namespace kiln::keras
