// SGD with optional momentum and Nesterov momentum (keras.optimizers.SGD).
#pragma once

#include <optional>

#include "kiln/keras/optimizers/optimizer.h"

namespace kiln::keras {

struct SGDOptions {
  LearningRate learning_rate = 0.01;
  double momentum = 0.0;
  bool nesterov = false;
  std::string name = "SGD";
  /// Gradient clipping (GradientClipping): at most one of the norm clips, each > 0.
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
};

/// velocity = momentum * velocity - lr * g;
/// w += velocity (plain) or w += momentum * velocity - lr * g (nesterov); w -= lr * g without
/// momentum.
class SGD : public Optimizer {
 public:
  explicit SGD(SGDOptions options = {});
  std::string class_name() const override { return "SGD"; }
  std::string get_config() const override;

 protected:
  void build(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                   const Tensor& local_step) override;

 private:
  double momentum_;
  bool nesterov_;
  std::vector<Variable> velocity_;
};

}  // namespace kiln::keras
