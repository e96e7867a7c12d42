// RMSprop (Keras defaults: lr 1e-3, rho 0.9, momentum 0, epsilon 1e-7, centered false).
#pragma once

#include <optional>

#include "kiln/keras/optimizers/optimizer.h"

namespace kiln::keras {

struct RMSpropOptions {
  LearningRate learning_rate = 0.001;
  double rho = 0.9;
  double momentum = 0.0;
  double epsilon = 1e-7;
  bool centered = false;
  std::string name = "RMSprop";
  /// Gradient clipping (GradientClipping): at most one of the norm clips, each > 0.
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
};

/// ms = rho ms + (1 - rho) g^2 (centered: minus mg^2, mg = rho mg + (1 - rho) g);
/// step = lr g / (sqrt(ms) + epsilon); with momentum: mom = momentum mom + step, w -= mom;
/// else w -= step (the Keras 3 form).
class RMSprop : public Optimizer {
 public:
  explicit RMSprop(RMSpropOptions options = {});
  std::string class_name() const override { return "RMSprop"; }
  std::string get_config() const override;

 protected:
  void build(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                   const Tensor& local_step) override;

 private:
  RMSpropOptions options_;
  std::vector<Variable> velocity_, average_gradient_, momentum_;
};

}  // namespace kiln::keras
