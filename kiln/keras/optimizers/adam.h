// Adam (Keras defaults: lr 1e-3, beta_1 0.9, beta_2 0.999, epsilon 1e-7) and AdamW (Adam with
// decoupled weight decay).
#pragma once

#include <optional>

#include "kiln/keras/optimizers/optimizer.h"

namespace kiln::keras {

struct AdamOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  std::string name = "Adam";
  /// Gradient clipping (GradientClipping): at most one of the norm clips, each > 0.
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
};

/// lr_t = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t); m = beta_1 m + (1 - beta_1) g;
/// v = beta_2 v + (1 - beta_2) g^2; w -= lr_t * m / (sqrt(v) + epsilon)  (the Keras 2 form,
/// epsilon outside the bias correction).
class Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions options = {});
  std::string class_name() const override { return "Adam"; }
  std::string get_config() const override;

 protected:
  void build(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                   const Tensor& local_step) override;

 private:
  double beta_1_, beta_2_, epsilon_;
  std::vector<Variable> m_, v_;
};

struct AdamWOptions {
  LearningRate learning_rate = 0.001;
  double weight_decay = 0.004;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  std::string name = "AdamW";
  /// Gradient clipping (GradientClipping): at most one of the norm clips, each > 0.
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
};

/// w -= lr * weight_decay * w, then the Adam update (Keras 3 AdamW).
class AdamW : public Adam {
 public:
  explicit AdamW(AdamWOptions options = {});
  std::string class_name() const override { return "AdamW"; }
  std::string get_config() const override;
  /// tf.keras has AdamW only among its new optimizers.
  bool has_keras2_legacy_form() const override { return false; }

 protected:
  void update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                   const Tensor& local_step) override;

 private:
  double weight_decay_;
};

}  // namespace kiln::keras
