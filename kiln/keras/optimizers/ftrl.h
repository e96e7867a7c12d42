// Ftrl, "Follow The Regularized Leader" (Keras defaults: lr 1e-3, learning_rate_power -0.5,
// initial_accumulator_value 0.1, every regularization strength 0, beta 0).
#pragma once

#include <optional>

#include "kiln/keras/optimizers/optimizer.h"

namespace kiln::keras {

struct FtrlOptions {
  LearningRate learning_rate = 0.001;
  double learning_rate_power = -0.5;
  double initial_accumulator_value = 0.1;
  double l1_regularization_strength = 0.0;
  double l2_regularization_strength = 0.0;
  double l2_shrinkage_regularization_strength = 0.0;
  double beta = 0.0;
  std::string name = "Ftrl";
  /// Gradient clipping (GradientClipping): at most one of the norm clips, each > 0.
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
};

/// With p = -learning_rate_power and n the accumulator (starting at initial_accumulator_value):
/// n' = n + g^2; linear += g + 2 l2_shrinkage w - (n'^p - n^p) / lr * w;
/// w = (clip(linear, -l1, l1) - linear) / (n'^p / lr + 2 (l2 + beta / (2 lr))); n = n'.
/// ValueError for a negative strength or initial_accumulator_value, or a positive power.
class Ftrl : public Optimizer {
 public:
  explicit Ftrl(FtrlOptions options = {});
  std::string class_name() const override { return "Ftrl"; }
  std::string get_config() const override;

 protected:
  void build(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                   const Tensor& local_step) override;

 private:
  FtrlOptions options_;
  std::vector<Variable> accumulator_, linear_;
};

}  // namespace kiln::keras
