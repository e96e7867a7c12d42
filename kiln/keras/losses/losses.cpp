// Losses: Keras formulas, with probabilities clipped to [eps, 1 - eps] (eps = 1e-7) and the
// from_logits forms computed stably.
#include "kiln/keras/losses/losses.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

#include "kiln/core/check.h"
#include "kiln/keras/losses/sample_weight.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {
namespace {

constexpr double kEpsilon = 1e-7;  // keras.backend.epsilon()

Tensor clip_probabilities(const Tensor& p) { return minimum(maximum(p, kEpsilon), 1.0 - kEpsilon); }

std::string name_or(const std::string& name, const char* fallback) { return name.empty() ? fallback : name; }

double checked_smoothing(double s) {
  if (!(s >= 0 && s <= 1))
    KILN_THROW(ConfigError, "[losses] label_smoothing must be in [0, 1], received ", s, ".");
  return s;
}

void check_reduction(const std::string& reduction) {
  if (reduction != "sum_over_batch_size" && reduction != "sum" && reduction != "none")
    KILN_THROW(ConfigError, "[losses] unknown reduction '", reduction,
               "'. Hint: use sum_over_batch_size, sum or none.");
}

}  // namespace

Loss::Loss(std::string name, std::string reduction) : name_(std::move(name)), reduction_(std::move(reduction)) {
  check_reduction(reduction_);
}

Tensor Loss::per_sample(const Tensor& y_true, const Tensor& y_pred) const {
  // Keras computes losses in float32 (the loss's dtype): a mixed-precision model's bf16/f16
  // output is widened first, so log and the sums do not round to 8 or 11 mantissa bits.
  return call(label_like(y_true, y_pred),
              size_of(y_pred.dtype()) == 2 && is_floating(y_pred.dtype()) ? cast(y_pred, DType::kF32) : y_pred);
}

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred) const {
  Tensor losses = per_sample(y_true, y_pred);
  if (reduction_ == "none") return losses;
  if (reduction_ == "sum") return reduce_sum(losses);
  return mean(losses);  // sum / number of per-sample values
}

Tensor Loss::weighted(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight, const Tensor& mask) const {
  if (!sample_weight.defined() && !mask.defined()) return (*this)(y_true, y_pred);
  Tensor losses = per_sample(y_true, y_pred);
  const Tensor m = mask.defined() ? broadcast_weights(mask, losses.shape(), name_) : Tensor();
  Tensor w = sample_weight.defined() ? broadcast_weights(sample_weight, losses.shape(), name_) : m;
  if (sample_weight.defined() && m.defined()) w = w * m;  // Keras's apply_mask: sample_weight * mask
  Tensor weighted = losses * w;
  if (reduction_ == "none") return weighted;
  if (reduction_ == "sum") return reduce_sum(weighted);
  // Keras's apply_valid_mask: over the kept values (divide_no_nan when none is kept); without
  // a mask compute_weighted_loss divides by the number of values, not by the weights' sum.
  if (!m.defined()) return reduce_sum(weighted) / static_cast<double>(std::max<int64_t>(losses.shape().num_elements(), 1));
  return reduce_sum(weighted) / maximum(reduce_sum(m), 1.0);
}

std::string Loss::get_config() const {
  return nlohmann::json({{"reduction", reduction_}, {"name", name_}}).dump();
}

namespace {

std::string with_from_logits(const std::string& base_config, bool from_logits,
                             std::optional<double> label_smoothing = std::nullopt) {
  nlohmann::json j = nlohmann::json::parse(base_config);
  j["from_logits"] = from_logits;
  if (label_smoothing) {
    j["label_smoothing"] = *label_smoothing;
    j["axis"] = -1;
  }
  return j.dump();
}

}  // namespace

std::string SparseCategoricalCrossentropy::get_config() const {
  return with_from_logits(Loss::get_config(), from_logits_);
}
std::string CategoricalCrossentropy::get_config() const {
  return with_from_logits(Loss::get_config(), from_logits_, label_smoothing_);
}
std::string BinaryCrossentropy::get_config() const {
  return with_from_logits(Loss::get_config(), from_logits_, label_smoothing_);
}

SparseCategoricalCrossentropy::SparseCategoricalCrossentropy(CrossentropyOptions options)
    : Loss(name_or(options.name, "sparse_categorical_crossentropy"), options.reduction),
      from_logits_(options.from_logits) {
  if (options.label_smoothing != 0)
    KILN_THROW(ConfigError, "[", name(), "] label_smoothing needs one-hot labels, as in Keras. Hint: use "
               "CategoricalCrossentropy with one-hot labels.");
}

Tensor SparseCategoricalCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  if (y_pred.rank() > 2 && y_true.shape().num_elements() * y_pred.dim(-1) == y_pred.shape().num_elements()) {
    // Sequence labels (batch, T) with logits (batch, T, classes): one loss per position, as Keras.
    Tensor flat = call(reshape(y_true, {-1}), reshape(y_pred, {-1, y_pred.dim(-1)}));
    return reshape(flat, Dims(y_pred.dims().begin(), y_pred.dims().end() - 1));
  }
  if (y_pred.rank() != 2)
    KILN_THROW(ShapeError, "[", name(), "] expected y_pred of shape (batch, classes) or (batch, ..., classes) with "
               "labels (batch, ...), received ", y_pred.shape(), " and labels ", y_true.shape(),
               ". Hint: the model's last layer should be Dense(classes).");
  Tensor labels = y_true;
  if (labels.rank() == 2 && labels.dim(1) == 1) labels = reshape(labels, {labels.dim(0)});  // (batch, 1) labels
  labels = is_floating(labels.dtype()) ? cast(labels, DType::kI32) : labels;
  if (from_logits_) return sparse_softmax_cross_entropy_with_logits(labels, y_pred);
  // -log p[label], with p renormalized and clipped as Keras does.
  Tensor p = clip_probabilities(y_pred / reduce_sum(y_pred, {-1}, /*keepdims=*/true));
  return -reduce_sum(one_hot(labels, y_pred.dim(-1), y_pred.dtype()) * log(p), {-1});
}

CategoricalCrossentropy::CategoricalCrossentropy(CrossentropyOptions options)
    : Loss(name_or(options.name, "categorical_crossentropy"), options.reduction),
      from_logits_(options.from_logits), label_smoothing_(checked_smoothing(options.label_smoothing)) {}

Tensor CategoricalCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  Tensor y = cast(y_true, y_pred.dtype());
  if (label_smoothing_ != 0)
    y = y * (1.0 - label_smoothing_) + label_smoothing_ / static_cast<double>(y_pred.dim(-1));
  if (from_logits_) return -reduce_sum(y * log_softmax(y_pred, -1), {-1});
  Tensor p = clip_probabilities(y_pred / reduce_sum(y_pred, {-1}, /*keepdims=*/true));
  return -reduce_sum(y * log(p), {-1});
}

BinaryCrossentropy::BinaryCrossentropy(CrossentropyOptions options)
    : Loss(name_or(options.name, "binary_crossentropy"), options.reduction),
      from_logits_(options.from_logits), label_smoothing_(checked_smoothing(options.label_smoothing)) {}

Tensor BinaryCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  Tensor y = cast(y_true, y_pred.dtype());
  if (label_smoothing_ != 0) y = y * (1.0 - label_smoothing_) + 0.5 * label_smoothing_;
  Tensor elementwise;
  if (from_logits_) {
    // max(x, 0) - x z + log(1 + exp(-|x|)), stable for any logit x.
    elementwise = maximum(y_pred, 0.0) - y_pred * y + log1p(exp(-abs(y_pred)));
  } else {
    Tensor p = clip_probabilities(y_pred);
    elementwise = -(y * log(p) + (1.0 - y) * log(1.0 - p));
  }
  return y_pred.rank() <= 1 ? elementwise : mean(elementwise, {-1});
}

namespace {

// The mean over the last axis; rank-1 values stay per element.
Tensor mean_last(const Tensor& t) { return t.rank() <= 1 ? t : mean(t, {-1}); }
Tensor sum_last(const Tensor& t) { return t.rank() <= 1 ? t : reduce_sum(t, {-1}); }
Tensor like(const Tensor& y_true, const Tensor& y_pred) { return cast(y_true, y_pred.dtype()); }

// {0, 1} labels become {-1, 1} when every label is 0 or 1 (Keras's _maybe_convert_labels).
Tensor signed_labels(const Tensor& y_true, const Tensor& y_pred) {
  Tensor y = like(y_true, y_pred);
  Tensor all_binary = reduce_min(cast(equal(y * (y - 1.0), 0.0), y.dtype()));
  return y + all_binary * (y - 1.0);
}

// log(1 + e^x) without overflow.
Tensor softplus(const Tensor& x) { return maximum(x, 0.0) + log1p(exp(-abs(x))); }

Tensor l2_normalize(const Tensor& x, int axis) {
  return x * rsqrt(maximum(reduce_sum(x * x, {axis}, /*keepdims=*/true), 1e-12));
}

}  // namespace

Tensor mean_squared_error(const Tensor& y_true, const Tensor& y_pred) {
  Tensor d = like(y_true, y_pred) - y_pred;
  return mean_last(d * d);
}

Tensor MeanSquaredError::call(const Tensor& y_true, const Tensor& y_pred) const {
  return mean_squared_error(y_true, y_pred);
}

Tensor mean_absolute_error(const Tensor& y_true, const Tensor& y_pred) {
  return mean_last(abs(y_pred - like(y_true, y_pred)));
}

Tensor mean_absolute_percentage_error(const Tensor& y_true, const Tensor& y_pred) {
  Tensor y = like(y_true, y_pred);
  return 100.0 * mean_last(abs((y - y_pred) / maximum(abs(y), kEpsilon)));
}

Tensor mean_squared_logarithmic_error(const Tensor& y_true, const Tensor& y_pred) {
  Tensor d = log(maximum(y_pred, kEpsilon) + 1.0) - log(maximum(like(y_true, y_pred), kEpsilon) + 1.0);
  return mean_last(d * d);
}

Tensor log_cosh(const Tensor& y_true, const Tensor& y_pred) {
  // log cosh x = x + softplus(-2x) - log 2, finite for any x.
  Tensor x = y_pred - like(y_true, y_pred);
  return mean_last(x + softplus(-2.0 * x) - M_LN2);
}

Tensor kl_divergence(const Tensor& y_true, const Tensor& y_pred) {
  Tensor y = minimum(maximum(like(y_true, y_pred), kEpsilon), 1.0);
  Tensor p = minimum(maximum(y_pred, kEpsilon), 1.0);
  return sum_last(y * log(y / p));
}

Tensor hinge(const Tensor& y_true, const Tensor& y_pred) {
  return mean_last(maximum(1.0 - signed_labels(y_true, y_pred) * y_pred, 0.0));
}

Tensor squared_hinge(const Tensor& y_true, const Tensor& y_pred) {
  Tensor h = maximum(1.0 - signed_labels(y_true, y_pred) * y_pred, 0.0);
  return mean_last(h * h);
}

Tensor categorical_hinge(const Tensor& y_true, const Tensor& y_pred) {
  Tensor y = like(y_true, y_pred);
  Tensor pos = sum_last(y * y_pred);
  Tensor neg = y_pred.rank() <= 1 ? (1.0 - y) * y_pred : reduce_max((1.0 - y) * y_pred, {-1});
  return maximum(neg - pos + 1.0, 0.0);
}

Tensor poisson(const Tensor& y_true, const Tensor& y_pred) {
  return mean_last(y_pred - like(y_true, y_pred) * log(y_pred + kEpsilon));
}

Tensor huber(const Tensor& y_true, const Tensor& y_pred, double delta) {
  Tensor a = abs(y_pred - like(y_true, y_pred));
  Tensor quadratic = minimum(a, delta);
  return mean_last(0.5 * quadratic * quadratic + delta * (a - quadratic));
}

Tensor cosine_similarity(const Tensor& y_true, const Tensor& y_pred, int axis) {
  return -reduce_sum(l2_normalize(like(y_true, y_pred), axis) * l2_normalize(y_pred, axis), {axis});
}

LossFunctionWrapper::LossFunctionWrapper(Fn fn, std::string class_name, const char* default_name,
                                         const LossOptions& options)
    : Loss(name_or(options.name, default_name), options.reduction), fn_(fn), class_name_(std::move(class_name)) {}

Huber::Huber(HuberOptions options) : Loss(options.name, options.reduction), delta_(options.delta) {
  if (!(delta_ > 0)) KILN_THROW(ConfigError, "[", name(), "] delta must be positive, received ", delta_, ".");
}

std::string Huber::get_config() const {
  nlohmann::json j = nlohmann::json::parse(Loss::get_config());
  j["delta"] = delta_;
  return j.dump();
}

CosineSimilarity::CosineSimilarity(CosineSimilarityOptions options)
    : Loss(options.name, options.reduction), axis_(options.axis) {}

std::string CosineSimilarity::get_config() const {
  nlohmann::json j = nlohmann::json::parse(Loss::get_config());
  j["axis"] = axis_;
  return j.dump();
}

}  // namespace kiln::keras
