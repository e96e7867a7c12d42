// Losses: Keras formulas, with probabilities clipped to [eps, 1 - eps] (eps = 1e-7) and the
// from_logits forms computed stably.
#include "kiln/keras/losses/losses.h"

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {
namespace {

constexpr double kEpsilon = 1e-7;  // keras.backend.epsilon()

Tensor clip_probabilities(const Tensor& p) { return minimum(maximum(p, kEpsilon), 1.0 - kEpsilon); }

std::string name_or(const std::string& name, const char* fallback) { return name.empty() ? fallback : name; }

void check_reduction(const std::string& reduction) {
  if (reduction != "sum_over_batch_size" && reduction != "sum" && reduction != "none")
    KILN_THROW(ConfigError, "[losses] unknown reduction '", reduction,
               "'. Hint: use sum_over_batch_size, sum or none.");
}

}  // namespace

Loss::Loss(std::string name, std::string reduction) : name_(std::move(name)), reduction_(std::move(reduction)) {
  check_reduction(reduction_);
}

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred) const {
  // Keras computes losses in float32 (the loss's dtype): a mixed-precision model's bf16/f16
  // output is widened first, so log and the sums do not round to 8 or 11 mantissa bits.
  Tensor per_sample = call(y_true, size_of(y_pred.dtype()) == 2 && is_floating(y_pred.dtype())
                                       ? cast(y_pred, DType::kF32) : y_pred);
  if (reduction_ == "none") return per_sample;
  if (reduction_ == "sum") return reduce_sum(per_sample);
  return mean(per_sample);  // sum / number of per-sample values
}

std::string Loss::get_config() const {
  return nlohmann::json({{"reduction", reduction_}, {"name", name_}}).dump();
}

namespace {

std::string with_from_logits(const std::string& base_config, bool from_logits) {
  nlohmann::json j = nlohmann::json::parse(base_config);
  j["from_logits"] = from_logits;
  return j.dump();
}

}  // namespace

std::string SparseCategoricalCrossentropy::get_config() const {
  return with_from_logits(Loss::get_config(), from_logits_);
}
std::string CategoricalCrossentropy::get_config() const {
  return with_from_logits(Loss::get_config(), from_logits_);
}
std::string BinaryCrossentropy::get_config() const {
  return with_from_logits(Loss::get_config(), from_logits_);
}

LossHandle::LossHandle(const char* name) {
  const std::string n = name;
  if (n == "sparse_categorical_crossentropy") *this = SparseCategoricalCrossentropy();
  else if (n == "categorical_crossentropy") *this = CategoricalCrossentropy();
  else if (n == "binary_crossentropy") *this = BinaryCrossentropy();
  else if (n == "mean_squared_error" || n == "mse") *this = MeanSquaredError();
  else
    KILN_THROW(ConfigError, "[compile] unknown loss '", n, "'. Hint: use sparse_categorical_crossentropy, "
               "categorical_crossentropy, binary_crossentropy or mean_squared_error, or a Loss object.");
}

SparseCategoricalCrossentropy::SparseCategoricalCrossentropy(CrossentropyOptions options)
    : Loss(name_or(options.name, "sparse_categorical_crossentropy"), options.reduction),
      from_logits_(options.from_logits) {}

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
      from_logits_(options.from_logits) {}

Tensor CategoricalCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  Tensor y = cast(y_true, y_pred.dtype());
  if (from_logits_) return -reduce_sum(y * log_softmax(y_pred, -1), {-1});
  Tensor p = clip_probabilities(y_pred / reduce_sum(y_pred, {-1}, /*keepdims=*/true));
  return -reduce_sum(y * log(p), {-1});
}

BinaryCrossentropy::BinaryCrossentropy(CrossentropyOptions options)
    : Loss(name_or(options.name, "binary_crossentropy"), options.reduction),
      from_logits_(options.from_logits) {}

Tensor BinaryCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  Tensor y = cast(y_true, y_pred.dtype());
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

Tensor MeanSquaredError::call(const Tensor& y_true, const Tensor& y_pred) const {
  Tensor d = cast(y_true, y_pred.dtype()) - y_pred;
  return y_pred.rank() <= 1 ? d * d : mean(d * d, {-1});
}

}  // namespace kiln::keras
