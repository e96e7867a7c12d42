// The Keras losses of the seed and its neighbours. Each takes y_true and y_pred batch first;
// labels convert to the prediction's dtype where the formula needs it.
#pragma once

#include "kiln/keras/losses/loss.h"

namespace kiln::keras {

struct CrossentropyOptions {
  bool from_logits = false;
  /// Labels move toward uniform: y (1 - s) + s / classes (categorical), y (1 - s) + s / 2
  /// (binary). Keras has no label smoothing for the sparse form; giving one there is an error.
  double label_smoothing = 0;
  std::string reduction = "sum_over_batch_size";
  std::string name = "";
};

/// y_true: integer class ids (batch,); y_pred: (batch, classes) probabilities or logits.
class SparseCategoricalCrossentropy : public Loss {
 public:
  explicit SparseCategoricalCrossentropy(CrossentropyOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "SparseCategoricalCrossentropy"; }
  std::string get_config() const override;
  bool from_logits() const { return from_logits_; }

 private:
  bool from_logits_;
};

/// y_true: one-hot (batch, classes); y_pred: (batch, classes).
class CategoricalCrossentropy : public Loss {
 public:
  explicit CategoricalCrossentropy(CrossentropyOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "CategoricalCrossentropy"; }
  std::string get_config() const override;

 private:
  bool from_logits_;
  double label_smoothing_;
};

/// Mean over the last axis of the elementwise binary crossentropy.
class BinaryCrossentropy : public Loss {
 public:
  explicit BinaryCrossentropy(CrossentropyOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "BinaryCrossentropy"; }
  std::string get_config() const override;

 private:
  bool from_logits_;
  double label_smoothing_;
};

struct MeanSquaredErrorOptions {
  std::string reduction = "sum_over_batch_size";
  std::string name = "mean_squared_error";
};

/// Mean over the last axis of (y_true - y_pred)^2.
class MeanSquaredError : public Loss {
 public:
  explicit MeanSquaredError(MeanSquaredErrorOptions options = {})
      : Loss(options.name, options.reduction) {}
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "MeanSquaredError"; }
};

/// Keras's per-sample loss functions (keras.losses.mean_absolute_error, ...): y_true and
/// y_pred of one shape, the result reduced over the last axis (rank-1 inputs stay per element).
Tensor mean_squared_error(const Tensor& y_true, const Tensor& y_pred);
Tensor mean_absolute_error(const Tensor& y_true, const Tensor& y_pred);
Tensor mean_absolute_percentage_error(const Tensor& y_true, const Tensor& y_pred);
Tensor mean_squared_logarithmic_error(const Tensor& y_true, const Tensor& y_pred);
Tensor log_cosh(const Tensor& y_true, const Tensor& y_pred);
Tensor kl_divergence(const Tensor& y_true, const Tensor& y_pred);
/// Labels in {0, 1} become {-1, 1}, as Keras converts them; {-1, 1} labels pass unchanged.
Tensor hinge(const Tensor& y_true, const Tensor& y_pred);
Tensor squared_hinge(const Tensor& y_true, const Tensor& y_pred);
Tensor categorical_hinge(const Tensor& y_true, const Tensor& y_pred);
Tensor poisson(const Tensor& y_true, const Tensor& y_pred);
Tensor huber(const Tensor& y_true, const Tensor& y_pred, double delta = 1.0);
Tensor cosine_similarity(const Tensor& y_true, const Tensor& y_pred, int axis = -1);

struct LossOptions {
  std::string reduction = "sum_over_batch_size";
  std::string name = "";  // "" takes the loss's snake_case name
};

/// A loss that applies one of the functions above (Keras's LossFunctionWrapper).
class LossFunctionWrapper : public Loss {
 public:
  using Fn = Tensor (*)(const Tensor&, const Tensor&);
  LossFunctionWrapper(Fn fn, std::string class_name, const char* default_name, const LossOptions& options);
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override { return fn_(y_true, y_pred); }
  std::string class_name() const override { return class_name_; }

 private:
  Fn fn_;
  std::string class_name_;
};

#define KILN_KERAS_LOSS_CLASS(Class, fn)                                                        \
  class Class : public LossFunctionWrapper {                                                      \
   public:                                                                                        \
    explicit Class(const LossOptions& options = {}) : LossFunctionWrapper(fn, #Class, #fn, options) {} \
  };
KILN_KERAS_LOSS_CLASS(MeanAbsoluteError, mean_absolute_error)
KILN_KERAS_LOSS_CLASS(MeanAbsolutePercentageError, mean_absolute_percentage_error)
KILN_KERAS_LOSS_CLASS(MeanSquaredLogarithmicError, mean_squared_logarithmic_error)
KILN_KERAS_LOSS_CLASS(LogCosh, log_cosh)
KILN_KERAS_LOSS_CLASS(KLDivergence, kl_divergence)
KILN_KERAS_LOSS_CLASS(Hinge, hinge)
KILN_KERAS_LOSS_CLASS(SquaredHinge, squared_hinge)
KILN_KERAS_LOSS_CLASS(CategoricalHinge, categorical_hinge)
KILN_KERAS_LOSS_CLASS(Poisson, poisson)
#undef KILN_KERAS_LOSS_CLASS

struct HuberOptions {
  double delta = 1.0;
  std::string reduction = "sum_over_batch_size";
  std::string name = "huber_loss";
};

/// 0.5 e^2 where |e| <= delta, else delta (|e| - 0.5 delta); mean over the last axis.
class Huber : public Loss {
 public:
  explicit Huber(HuberOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override { return huber(y_true, y_pred, delta_); }
  std::string class_name() const override { return "Huber"; }
  std::string get_config() const override;

 private:
  double delta_;
};

struct CosineSimilarityOptions {
  int axis = -1;
  std::string reduction = "sum_over_batch_size";
  std::string name = "cosine_similarity";
};

/// -cos(y_true, y_pred) along `axis` (-1 when the vectors agree), as Keras defines the loss.
class CosineSimilarity : public Loss {
 public:
  explicit CosineSimilarity(CosineSimilarityOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override {
    return cosine_similarity(y_true, y_pred, axis_);
  }
  std::string class_name() const override { return "CosineSimilarity"; }
  std::string get_config() const override;

 private:
  int axis_;
};

/// A loss from its Keras config: {"class_name": ..., "config": {...}} (every class above),
/// or a name ("mae", "huber", "kl_divergence", ...). ConfigError naming it when unknown.
LossHandle loss_from_config(const std::string& class_name, const std::string& config_json);

}  // namespace kiln::keras
