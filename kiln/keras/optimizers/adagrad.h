// Adagrad (Keras defaults: lr 1e-3, initial_accumulator_value 0.1, epsilon 1e-7).
#pragma once

#include <optional>

#include "kiln/keras/optimizers/optimizer.h"

namespace kiln::keras {

struct AdagradOptions {
  LearningRate learning_rate = 0.001;
  double initial_accumulator_value = 0.1;
  double epsilon = 1e-7;
  std::string name = "Adagrad";
  /// Gradient clipping (GradientClipping): at most one of the norm clips, each > 0.
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
};

/// accumulator += g^2 (starting at initial_accumulator_value);
/// w -= lr * g / sqrt(accumulator + epsilon)  (the Keras 2.11+/3 form, epsilon inside the root).
class Adagrad : public Optimizer {
 public:
  explicit Adagrad(AdagradOptions options = {});
  std::string class_name() const override { return "Adagrad"; }
  std::string get_config() const override;

 protected:
  void build(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                   const Tensor& local_step) override;

 private:
  double initial_accumulator_value_, epsilon_;
  std::vector<Variable> accumulator_;
};

}  // namespace kiln::keras
