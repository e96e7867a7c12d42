// Adamax (Keras defaults: lr 1e-3, beta_1 0.9, beta_2 0.999, epsilon 1e-7), Adam with the
// infinity norm.
#pragma once

#include <optional>

#include "kiln/keras/optimizers/optimizer.h"

namespace kiln::keras {

struct AdamaxOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  std::string name = "Adamax";
  /// Gradient clipping (GradientClipping): at most one of the norm clips, each > 0.
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
};

/// m = beta_1 m + (1 - beta_1) g; u = max(beta_2 u, |g|);
/// w -= lr * m / ((1 - beta_1^t) (u + epsilon)).
class Adamax : public Optimizer {
 public:
  explicit Adamax(AdamaxOptions options = {});
  std::string class_name() const override { return "Adamax"; }
  std::string get_config() const override;

 protected:
  void build(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                   const Tensor& local_step) override;

 private:
  double beta_1_, beta_2_, epsilon_;
  std::vector<Variable> m_, u_;
};

}  // namespace kiln::keras
