// Regression and top-k metrics: per-sample functions wrapped in running means.
#include "kiln/keras/metrics/regression.h"

#include <nlohmann/json.hpp>

#include "kiln/keras/losses/losses.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras::metrics {
MeanAbsoluteError::MeanAbsoluteError(std::string name) : MeanMetricWrapper(std::move(name), keras::mean_absolute_error) {}

MeanSquaredError::MeanSquaredError(std::string name)
    : MeanMetricWrapper(std::move(name), keras::mean_squared_error) {}

RootMeanSquaredError::RootMeanSquaredError(std::string name) : MeanMetricWrapper(std::move(name), keras::mean_squared_error) {}

Tensor RootMeanSquaredError::result() const { return sqrt(Mean::result()); }

Tensor sparse_top_k_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, int k) {
  Tensor labels = y_true.rank() == y_pred.rank() ? reshape(y_true, Dims(y_pred.dims().begin(), y_pred.dims().end() - 1))
                                                 : y_true;
  Tensor scores = cast(y_pred, DType::kF32);
  Tensor own = reduce_sum(scores * one_hot(cast(labels, DType::kI32), y_pred.dim(-1)), {-1}, /*keepdims=*/true);
  Tensor above = reduce_sum(cast(greater(scores, own), DType::kF32), {-1});
  return cast(less(above, static_cast<double>(k)), DType::kF32);
}

TopKCategoricalAccuracy::TopKCategoricalAccuracy(int k, std::string name)
    : MeanMetricWrapper(std::move(name), [k](const Tensor& t, const Tensor& p) {
        return sparse_top_k_categorical_accuracy(argmax(t, -1), p, k);
      }),
      k_(k) {}

SparseTopKCategoricalAccuracy::SparseTopKCategoricalAccuracy(int k, std::string name)
    : MeanMetricWrapper(std::move(name), [k](const Tensor& t, const Tensor& p) {
        return sparse_top_k_categorical_accuracy(t, p, k);
      }),
      k_(k) {}

std::string config_with_k(const Metric& metric, int k) {
  nlohmann::json j = nlohmann::json::parse(metric.Metric::get_config());
  j["k"] = k;
  return j.dump();
}

}  // namespace kiln::keras::metrics
