// Metric base, Mean, accuracies and the name lookup.
#include "kiln/keras/metrics/metric.h"

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/keras/losses/sample_weight.h"
#include "kiln/keras/metrics/accuracy.h"
#include "kiln/keras/metrics/confusion.h"
#include "kiln/keras/metrics/regression.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {

void Metric::reset_state() {
  for (const Variable& v : variables_) v.assign(zeros(v.shape()));
}

std::string Metric::get_config() const { return nlohmann::json{{"name", name_}, {"dtype", "float32"}}.dump(); }

Variable Metric::add_variable(const std::string& name, Dims dims) {
  variables_.emplace_back(name_ + "/" + name, HostTensor(Shape(DType::kF32, std::move(dims))), /*trainable=*/false);
  variables_.back().set_sum_on_read(true);  // replicas accumulate their shards apart
  return variables_.back();
}

Mean::Mean(std::string name) : Metric(std::move(name)) {
  total_ = add_variable("total");
  count_ = add_variable("count");
}

void Mean::update(const Tensor& values) { update(values, 1.0); }

void Mean::update(const Tensor& values, double sample_weight) {
  Tensor v = cast(values, DType::kF32);
  Tensor sum = reduce_sum(v);
  total_.assign(total_.read() + (sample_weight == 1.0 ? sum : sum * sample_weight));
  count_.assign(count_.read() + static_cast<double>(v.shape().num_elements()) * sample_weight);
}

void Mean::update(const Tensor& values, const Tensor& sample_weight) {
  Tensor v = cast(values, DType::kF32);
  Tensor w = broadcast_weights(cast(sample_weight, DType::kF32), v.shape(), name());
  total_.assign(total_.read() + reduce_sum(v * w));
  count_.assign(count_.read() + reduce_sum(w));
}

void Metric::update_state_weighted(const Tensor& /*y_true*/, const Tensor& /*y_pred*/, const Tensor& /*sample_weight*/) {
  KILN_THROW(ValueError, "[", name_, "] this metric does not take sample weights yet, and it received some: as one of ",
             "compile's weighted_metrics, or because the model's output carries a mask, which Keras turns into sample ",
             "weights. Hint: override update_state_weighted in this Metric subclass, list it in metrics (unweighted), or ",
             "end the model with a layer that consumes the mask.");
}

// Keras divide_no_nan: 0 before any update.
Tensor Mean::result() const { return total_.read() / maximum(count_.read(), 1.0); }

Tensor sparse_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred) {
  Tensor labels = y_true.rank() == y_pred.rank() ? reshape(y_true, Dims(y_pred.dims().begin(), y_pred.dims().end() - 1))
                                                 : y_true;
  return cast(equal(argmax(y_pred, -1), cast(labels, DType::kI32)), DType::kF32);
}

Tensor categorical_accuracy(const Tensor& y_true, const Tensor& y_pred) {
  return cast(equal(argmax(y_pred, -1), argmax(y_true, -1)), DType::kF32);
}

Tensor binary_accuracy(const Tensor& y_true, const Tensor& y_pred, double threshold) {
  Tensor predicted = cast(greater(y_pred, threshold), DType::kF32);
  return cast(equal(predicted, cast(y_true, DType::kF32)), DType::kF32);
}

SparseCategoricalAccuracy::SparseCategoricalAccuracy(std::string name)
    : MeanMetricWrapper(std::move(name), sparse_categorical_accuracy) {}
CategoricalAccuracy::CategoricalAccuracy(std::string name)
    : MeanMetricWrapper(std::move(name), categorical_accuracy) {}
BinaryAccuracy::BinaryAccuracy(std::string name, double threshold)
    : MeanMetricWrapper(std::move(name),
                        [threshold](const Tensor& t, const Tensor& p) { return binary_accuracy(t, p, threshold); }),
      threshold_(threshold) {}

std::string BinaryAccuracy::get_config() const {
  nlohmann::json j = nlohmann::json::parse(Metric::get_config());
  j["threshold"] = threshold_;
  return j.dump();
}

Accuracy::Accuracy(std::string name) : MeanMetricWrapper(std::move(name), nullptr) {}

void Accuracy::resolve(const Tensor& y_true, const Tensor& y_pred) {
  if (fn_) return;
  // Keras compile_utils: decided by the shapes.
  const int64_t pred_last = y_pred.rank() > 0 ? y_pred.dim(-1) : 1;
  const int64_t true_last = y_true.rank() > 0 ? y_true.dim(-1) : 1;
  if (pred_last == 1) fn_ = [](const Tensor& t, const Tensor& p) { return binary_accuracy(t, p); };
  else if (y_true.rank() < y_pred.rank() || true_last == 1) fn_ = sparse_categorical_accuracy;
  else fn_ = categorical_accuracy;
}

void Accuracy::update_state(const Tensor& y_true, const Tensor& y_pred) {
  resolve(y_true, y_pred);
  MeanMetricWrapper::update_state(y_true, y_pred);
}

void Accuracy::update_state_weighted(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  resolve(y_true, y_pred);
  MeanMetricWrapper::update_state_weighted(y_true, y_pred, sample_weight);
}

MetricHandle::MetricHandle(const char* name) {
  // A function name names the metric in logs as given (Keras: "mae" logs as "mae"); a class
  // name gives the class's default name.
  const std::string n = name;
  if (n == "accuracy" || n == "acc") *this = Accuracy(n);
  else if (n == "sparse_categorical_accuracy") *this = SparseCategoricalAccuracy();
  else if (n == "categorical_accuracy") *this = CategoricalAccuracy();
  else if (n == "binary_accuracy") *this = BinaryAccuracy();
  else if (n == "mae" || n == "mean_absolute_error") *this = metrics::MeanAbsoluteError(n);
  else if (n == "MeanAbsoluteError") *this = metrics::MeanAbsoluteError();
  else if (n == "mse" || n == "mean_squared_error") *this = metrics::MeanSquaredError(n);
  else if (n == "MeanSquaredError") *this = metrics::MeanSquaredError();
  else if (n == "RootMeanSquaredError" || n == "root_mean_squared_error") *this = metrics::RootMeanSquaredError();
  else if (n == "top_k_categorical_accuracy" || n == "TopKCategoricalAccuracy") *this = metrics::TopKCategoricalAccuracy();
  else if (n == "sparse_top_k_categorical_accuracy" || n == "SparseTopKCategoricalAccuracy")
    *this = metrics::SparseTopKCategoricalAccuracy();
  else if (n == "precision" || n == "Precision") *this = metrics::Precision();
  else if (n == "recall" || n == "Recall") *this = metrics::Recall();
  else if (n == "auc" || n == "AUC") *this = metrics::AUC();
  else
    KILN_THROW(ConfigError, "[compile] unknown metric '", n, "'. Hint: use accuracy, "
               "sparse_categorical_accuracy, categorical_accuracy, binary_accuracy, mae, mse, "
               "RootMeanSquaredError, top_k_categorical_accuracy, sparse_top_k_categorical_accuracy, "
               "Precision, Recall or AUC, or a Metric object.");
}

}  // namespace kiln::keras
