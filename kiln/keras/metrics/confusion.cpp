// Confusion-count metrics: counts per threshold as (n, T) comparisons summed over samples.
#include "kiln/keras/metrics/confusion.h"

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/keras/losses/sample_weight.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras::metrics {
namespace {

// Labels and predictions as flat f32 columns (n, 1), so they broadcast against thresholds.
std::pair<Tensor, Tensor> columns(const Tensor& y_true, const Tensor& y_pred) {
  return {reshape(cast(y_true, DType::kF32), {-1, 1}), reshape(cast(y_pred, DType::kF32), {-1, 1})};
}

// Keras's divide_no_nan: 0 where the denominator is 0.
Tensor divide_no_nan(const Tensor& num, const Tensor& den) {
  Tensor zero = equal(den, 0.0);
  return where(zero, zeros_like(num), num / where(zero, ones_like(den), den));
}

// Counts per threshold of the (n, T) indicator `hits` (e.g. label * (prediction > t)): its
// sum over samples, each sample counting its weight w (n, 1) when given.
Tensor counts(const Tensor& hits, const Tensor& w) { return reduce_sum(w.defined() ? hits * w : hits, {0}); }

// Sample weights as a column (n, 1) beside columns(): broadcast to y_pred's values first.
Tensor weight_column(const Tensor& sample_weight, const Tensor& y_pred, const std::string& metric) {
  return reshape(broadcast_weights(sample_weight, y_pred.shape(), metric), {-1, 1});
}

// The thresholds as a (1, T) row, to compare with a (n, 1) column of predictions.
Tensor threshold_row(const std::vector<double>& thresholds) {
  const std::vector<float> t(thresholds.begin(), thresholds.end());
  return reshape(Tensor::from_vector<float>({static_cast<int64_t>(t.size())}, t), {1, -1});
}

void check_threshold(double t, const std::string& name) {
  if (!(t >= 0 && t <= 1)) KILN_THROW(ConfigError, "[", name, "] threshold must be in [0, 1], received ", t, ".");
}

}  // namespace

ThresholdedRatio::ThresholdedRatio(std::vector<double> thresholds, std::string name, const std::string& misses_name)
    : Metric(std::move(name)), thresholds_(std::move(thresholds)) {
  if (thresholds_.empty()) KILN_THROW(ConfigError, "[", this->name(), "] expected at least one threshold.");
  for (double t : thresholds_) check_threshold(t, this->name());
  const Dims dims{static_cast<int64_t>(thresholds_.size())};
  true_positives_ = add_variable("true_positives", dims);
  misses_ = add_variable(misses_name, dims);
}

void ThresholdedRatio::update_state(const Tensor& y_true, const Tensor& y_pred) { accumulate(y_true, y_pred, Tensor()); }

void ThresholdedRatio::update_state_weighted(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  accumulate(y_true, y_pred, weight_column(sample_weight, y_pred, name()));
}

void ThresholdedRatio::accumulate(const Tensor& y_true, const Tensor& y_pred, const Tensor& weights) {
  auto [y, p] = columns(y_true, y_pred);
  const Tensor predicted = cast(greater(p, threshold_row(thresholds_)), DType::kF32);  // (n, T)
  true_positives_.assign(true_positives_.read() + counts(y * predicted, weights));
  misses_.assign(misses_.read() + counts(misses(y, predicted), weights));
}

Tensor ThresholdedRatio::result() const {
  const Tensor ratio = divide_no_nan(true_positives_.read(), true_positives_.read() + misses_.read());
  return thresholds_.size() == 1 ? reshape(ratio, {}) : ratio;
}

std::string ThresholdedRatio::get_config() const {
  nlohmann::json j = nlohmann::json::parse(Metric::get_config());
  j["thresholds"] = thresholds_.size() == 1 ? nlohmann::json(thresholds_[0]) : nlohmann::json(thresholds_);
  j["top_k"] = nullptr;
  j["class_id"] = nullptr;
  return j.dump();
}

Precision::Precision(std::vector<double> thresholds, std::string name)
    : ThresholdedRatio(std::move(thresholds), std::move(name), "false_positives") {}

Tensor Precision::misses(const Tensor& y, const Tensor& predicted) const { return (1.0 - y) * predicted; }

Recall::Recall(std::vector<double> thresholds, std::string name)
    : ThresholdedRatio(std::move(thresholds), std::move(name), "false_negatives") {}

Tensor Recall::misses(const Tensor& y, const Tensor& predicted) const { return y * (1.0 - predicted); }

AUC::AUC(AucOptions options) : Metric(options.name), curve_(options.curve) {
  if (curve_ != "ROC" && curve_ != "PR")
    KILN_THROW(ConfigError, "[", name(), "] unknown curve '", curve_, "'. Hint: use ROC or PR.");
  if (options.num_thresholds < 2)
    KILN_THROW(ConfigError, "[", name(), "] num_thresholds must be > 1, received ", options.num_thresholds, ".");
  // Keras: i / (n - 1) inside, with -eps and 1 + eps at the ends so 0 and 1 predictions count.
  const int n = options.num_thresholds;
  constexpr double kEps = 1e-7;
  for (int i = 0; i < n; ++i) thresholds_.push_back(static_cast<double>(i) / (n - 1));
  thresholds_.front() = -kEps;
  thresholds_.back() = 1.0 + kEps;
  const Dims dims{n};
  tp_ = add_variable("true_positives", dims);
  fp_ = add_variable("false_positives", dims);
  tn_ = add_variable("true_negatives", dims);
  fn_ = add_variable("false_negatives", dims);
}

void AUC::update_state(const Tensor& y_true, const Tensor& y_pred) { accumulate(y_true, y_pred, Tensor()); }

void AUC::update_state_weighted(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  accumulate(y_true, y_pred, weight_column(sample_weight, y_pred, name()));
}

void AUC::accumulate(const Tensor& y_true, const Tensor& y_pred, const Tensor& weights) {
  auto [y, p] = columns(y_true, y_pred);
  Tensor above = cast(greater(p, threshold_row(thresholds_)), DType::kF32);  // (n, T)
  Tensor below = 1.0 - above;
  tp_.assign(tp_.read() + counts(y * above, weights));
  fp_.assign(fp_.read() + counts((1.0 - y) * above, weights));
  tn_.assign(tn_.read() + counts((1.0 - y) * below, weights));
  fn_.assign(fn_.read() + counts(y * below, weights));
}

std::string AUC::get_config() const {
  nlohmann::json j = nlohmann::json::parse(Metric::get_config());
  j["num_thresholds"] = static_cast<int64_t>(thresholds_.size());
  j["curve"] = curve_;
  j["summation_method"] = "interpolation";
  j["multi_label"] = false;
  j["num_labels"] = nullptr;
  j["label_weights"] = nullptr;
  j["from_logits"] = false;
  return j.dump();
}

Tensor AUC::result() const {
  const int64_t n = static_cast<int64_t>(thresholds_.size());
  auto head = [n](const Tensor& x) { return slice(x, {0}, {n - 1}); };
  auto tail = [n](const Tensor& x) { return slice(x, {1}, {n}); };
  Tensor tp = tp_.read(), fp = fp_.read(), tn = tn_.read(), fn = fn_.read();
  if (curve_ == "ROC") {
    Tensor tpr = divide_no_nan(tp, tp + fn), fpr = divide_no_nan(fp, fp + tn);
    return reduce_sum((head(fpr) - tail(fpr)) * (head(tpr) + tail(tpr)) * 0.5);
  }
  // PR (Davis & Goadrich 2006, as keras.metrics.AUC's interpolate_pr_auc): precision is
  // interpolated along each threshold step rather than taken at its end.
  Tensor dtp = head(tp) - tail(tp);
  Tensor pos = tp + fp;
  Tensor dp = head(pos) - tail(pos);
  Tensor slope = divide_no_nan(dtp, maximum(dp, 0.0));
  Tensor intercept = tail(tp) - slope * tail(pos);
  Tensor both = cast(greater(head(pos), 0.0), DType::kF32) * cast(greater(tail(pos), 0.0), DType::kF32);
  Tensor ratio = where(greater(both, 0.0), divide_no_nan(head(pos), maximum(tail(pos), 0.0)), ones_like(both));
  return reduce_sum(divide_no_nan(slope * (dtp + intercept * log(ratio)), maximum(tail(tp) + tail(fn), 0.0)));
}

}  // namespace kiln::keras::metrics
