// The regression, top-k and confusion metrics against values worked out by hand or by an
// independent formula (ROC AUC as the Mann-Whitney statistic).
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "kiln/keras/metrics/confusion.h"
#include "kiln/keras/metrics/regression.h"
#include "kiln/keras/saving/training_config.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras::metrics {
namespace {

using testing::scalar;

Tensor f32(Dims dims, std::vector<float> v) { return Tensor::from_vector<float>(std::move(dims), v); }
Tensor i32(Dims dims, std::vector<int32_t> v) { return Tensor::from_vector<int32_t>(std::move(dims), v); }

TEST(RegressionMetricsTest, MeanErrorsAndTheRootOfTheRunningMean) {
  MeanAbsoluteError mae;
  MeanSquaredError mse;
  RootMeanSquaredError rmse;
  for (Metric* m : std::vector<Metric*>{&mae, &mse, &rmse}) {
    m->update_state(f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {1, 1, 1, 1}));  // errors 0 1 2 3
    m->update_state(f32({1, 2}, {0, 0}), f32({1, 2}, {4, 0}));              // errors 4 0
  }
  // Per-row means: |e| 0.5, 2.5, 2; e^2 0.5, 6.5, 8. Means over the three rows.
  EXPECT_NEAR(scalar(mae.result()), 5.0 / 3, 1e-6);
  EXPECT_NEAR(scalar(mse.result()), 15.0 / 3, 1e-6);
  EXPECT_NEAR(scalar(rmse.result()), std::sqrt(5.0), 1e-6);  // not the mean of per-batch roots
  rmse.reset_state();
  EXPECT_EQ(scalar(rmse.result()), 0.0);
}

TEST(TopKMetricsTest, CountsTheLabelInsideTheTopKWithTiesInside) {
  // k = 2. Row 0: label 1 scores 0.3, one score above: in. Row 1: label 0 scores 0.1, two
  // above: out. Row 2: label 2 ties the second highest (0.5, 0.5 under 0.9): in, as in_top_k.
  Tensor scores = f32({3, 3}, {0.6f, 0.3f, 0.1f, 0.1f, 0.4f, 0.5f, 0.9f, 0.5f, 0.5f});
  SparseTopKCategoricalAccuracy sparse(2);
  sparse.update_state(i32({3}, {1, 0, 2}), scores);
  EXPECT_NEAR(scalar(sparse.result()), 2.0 / 3, 1e-6);
  TopKCategoricalAccuracy onehot(2);
  onehot.update_state(f32({3, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 1}), scores);
  EXPECT_NEAR(scalar(onehot.result()), 2.0 / 3, 1e-6);
  SparseTopKCategoricalAccuracy top1(1);
  top1.update_state(i32({3}, {1, 0, 2}), scores);
  EXPECT_NEAR(scalar(top1.result()), 0.0, 1e-6);
}

TEST(ConfusionMetricsTest, PrecisionAndRecallAtTheirThreshold) {
  // Predictions above 0.5: rows 0, 2, 3. Labels 1 at rows 0, 1, 3. tp 2, fp 1, fn 1.
  Tensor y = f32({5}, {1, 1, 0, 1, 0}), p = f32({5}, {0.9f, 0.2f, 0.7f, 0.6f, 0.5f});
  Precision precision;
  Recall recall;
  precision.update_state(y, p);
  recall.update_state(y, p);
  EXPECT_NEAR(scalar(precision.result()), 2.0 / 3, 1e-6);
  EXPECT_NEAR(scalar(recall.result()), 2.0 / 3, 1e-6);
  Precision strict(0.8);
  strict.update_state(y, p);
  EXPECT_NEAR(scalar(strict.result()), 1.0, 1e-6);
  EXPECT_EQ(scalar(Precision().result()), 0.0);  // no predictions yet: 0, not NaN
  KILN_EXPECT_ERROR(Recall(1.5), ConfigError, "threshold must be in [0, 1]");
}

TEST(ConfusionMetricsTest, AucOnThreeThresholdsByHand) {
  // Positive 0.9, negative 0.6, positive 0.4; thresholds -eps, 0.5, 1 + eps.
  // Counts per threshold: tp 2 1 0, fp 1 1 0, fn 0 1 2, tn 0 0 1.
  Tensor y = f32({3, 1}, {1, 0, 1}), p = f32({3, 1}, {0.9f, 0.6f, 0.4f});
  AUC roc({.num_thresholds = 3});
  roc.update_state(y, p);
  // tpr 1 .5 0, fpr 1 1 0: (1 - 1)(1 + .5)/2 + (1 - 0)(.5 + 0)/2.
  EXPECT_NEAR(scalar(roc.result()), 0.25, 1e-6);
  AUC pr({.num_thresholds = 3, .curve = "PR"});
  pr.update_state(y, p);
  // Davis-Goadrich steps: (1 - log 1.5) / 2 and 0.5 (1 + 0) / 2.
  EXPECT_NEAR(scalar(pr.result()), (1 - std::log(1.5)) / 2 + 0.25, 1e-6);
}

TEST(ConfusionMetricsTest, RocAucWithFineThresholdsIsTheMannWhitneyStatistic) {
  // Predictions off the threshold grid (steps of 1/199): every pair is separated by a
  // threshold, so the trapezoids sum to P(positive scores above negative), ties half.
  std::vector<float> y, p;
  for (int i = 0; i < 40; ++i) {
    y.push_back(static_cast<float>((i * 7 + 3) % 5 < 2));
    p.push_back(static_cast<float>((std::fmod(i * 0.37, 1.0) * 180 + 5.5) / 199));
  }
  double wins = 0, pairs = 0;
  for (size_t a = 0; a < y.size(); ++a)
    for (size_t b = 0; b < y.size(); ++b)
      if (y[a] == 1 && y[b] == 0) {
        pairs += 1;
        wins += p[a] > p[b] ? 1 : (p[a] == p[b] ? 0.5 : 0);
      }
  AUC auc;
  auc.update_state(f32({20}, std::vector<float>(y.begin(), y.begin() + 20)),
                   f32({20}, std::vector<float>(p.begin(), p.begin() + 20)));
  auc.update_state(f32({20}, std::vector<float>(y.begin() + 20, y.end())),
                   f32({20}, std::vector<float>(p.begin() + 20, p.end())));
  EXPECT_NEAR(scalar(auc.result()), wins / pairs, 1e-5);
  KILN_EXPECT_ERROR(AUC({.curve = "roc curve"}), ConfigError, "unknown curve");
}

TEST(ConfusionMetricsTest, SampleWeightsAccumulateIntoTheCounts) {
  // Keras's update_confusion_matrix_variables: each value adds its weight, not 1.
  // Above 0.5: rows 0 (y 1, w 2), 1 (y 0, w 0.5), 3 (y 1, w 0). Below: 2 (y 1, w 4), 4 (y 0, w 3).
  Tensor y = f32({5, 1}, {1, 0, 1, 1, 0}), p = f32({5, 1}, {0.9f, 0.8f, 0.3f, 0.6f, 0.1f});
  Tensor w = f32({5}, {2, 0.5f, 4, 0, 3});  // (n,) against (n, 1) predictions: one per row
  Precision precision;
  Recall recall;
  precision.update_state_weighted(y, p, w);
  recall.update_state_weighted(y, p, w);
  EXPECT_NEAR(scalar(precision.result()), 2 / 2.5, 1e-6);  // tp 2 + 0, fp 0.5
  EXPECT_NEAR(scalar(recall.result()), 2 / 6.0, 1e-6);     // tp 2, fn 4
  // Thresholds -eps, 0.5, 1 + eps: tp 6 2 0, fp 3.5 0.5 0, tn 0 3 3.5, fn 0 4 6.
  AUC roc({.num_thresholds = 3});
  roc.update_state_weighted(y, p, w);
  // tpr 1 1/3 0, fpr 1 1/7 0: (6/7)(4/3)/2 + (1/7)(1/3)/2 = 25/42.
  EXPECT_NEAR(scalar(roc.result()), 25.0 / 42, 1e-6);
  // Unit weights count as no weights.
  Precision unit;
  unit.update_state_weighted(y, p, f32({5}, {1, 1, 1, 1, 1}));
  EXPECT_NEAR(scalar(unit.result()), 2.0 / 3, 1e-6);
}

TEST(ConfusionMetricsTest, IntegerWeightsCountAsRepeatedRowsAndRocAucIsTheWeightedMannWhitney) {
  std::vector<float> y, p, w, y_rep, p_rep;
  for (int i = 0; i < 30; ++i) {
    y.push_back(static_cast<float>((i * 7 + 3) % 5 < 2));
    p.push_back(static_cast<float>((std::fmod(i * 0.37, 1.0) * 180 + 5.5) / 199));
    w.push_back(static_cast<float>(i % 4));  // 0..3, zeros included
    for (int k = 0; k < i % 4; ++k) y_rep.push_back(y.back()), p_rep.push_back(p.back());
  }
  const auto n = static_cast<int64_t>(y.size()), n_rep = static_cast<int64_t>(y_rep.size());
  for (const std::string curve : {"ROC", "PR"}) {
    SCOPED_TRACE(curve);
    AUC weighted({.curve = curve}), repeated({.curve = curve});
    weighted.update_state_weighted(f32({n}, y), f32({n}, p), f32({n}, w));
    repeated.update_state(f32({n_rep}, y_rep), f32({n_rep}, p_rep));
    EXPECT_NEAR(scalar(weighted.result()), scalar(repeated.result()), 1e-5);
  }
  Recall recall(0.4), recall_rep(0.4);
  recall.update_state_weighted(f32({n}, y), f32({n}, p), f32({n}, w));
  recall_rep.update_state(f32({n_rep}, y_rep), f32({n_rep}, p_rep));
  EXPECT_NEAR(scalar(recall.result()), scalar(recall_rep.result()), 1e-6);
  double wins = 0, pairs = 0;  // sum of w_a w_b over (positive a, negative b) pairs, in f64
  for (size_t a = 0; a < y.size(); ++a)
    for (size_t b = 0; b < y.size(); ++b)
      if (y[a] == 1 && y[b] == 0) {
        pairs += double(w[a]) * w[b];
        wins += double(w[a]) * w[b] * (p[a] > p[b] ? 1 : (p[a] == p[b] ? 0.5 : 0));
      }
  AUC auc;
  auc.update_state_weighted(f32({n}, y), f32({n}, p), f32({n}, w));
  EXPECT_NEAR(scalar(auc.result()), wins / pairs, 1e-5);
}

TEST(MetricNamesTest, KerasNamesResolve) {
  EXPECT_EQ(MetricHandle("mae")->name(), "mae");
  EXPECT_EQ(MetricHandle("RootMeanSquaredError")->name(), "root_mean_squared_error");
  EXPECT_EQ(MetricHandle("AUC")->name(), "auc");
  EXPECT_EQ(MetricHandle("precision")->name(), "precision");
  EXPECT_EQ(MetricHandle("sparse_top_k_categorical_accuracy")->name(), "sparse_top_k_categorical_accuracy");
  KILN_EXPECT_ERROR(MetricHandle("aucc"), ConfigError, "unknown metric 'aucc'");
}

TEST(MetricNamesTest, TrainingConfigsNameMetricsByClassWithOptions) {
  const std::string tc = R"({"loss": "mse", "optimizer_config": {"class_name": "SGD", "config": {}},
    "metrics": [{"class_name": "AUC", "config": {"name": "pr_auc", "num_thresholds": 3, "curve": "PR"}},
                {"class_name": "Precision", "config": {"name": "precision", "thresholds": null}},
                {"class_name": "Recall", "config": {"name": "r8", "thresholds": [0.8]}},
                {"class_name": "RootMeanSquaredError", "config": {"name": "rmse"}},
                {"class_name": "SparseTopKCategoricalAccuracy", "config": {"name": "top2", "k": 2}}]})";
  CompileOptions options = compile_options_from_training_config(tc);
  ASSERT_EQ(options.metrics.size(), 5u);
  EXPECT_EQ(options.metrics[0]->name(), "pr_auc");
  options.metrics[0]->update_state(f32({3}, {1, 0, 1}), f32({3}, {0.9f, 0.6f, 0.4f}));
  EXPECT_NEAR(scalar(options.metrics[0]->result()), (1 - std::log(1.5)) / 2 + 0.25, 1e-6);  // PR, 3 thresholds
  options.metrics[2]->update_state(f32({2}, {1, 1}), f32({2}, {0.9f, 0.7f}));
  EXPECT_NEAR(scalar(options.metrics[2]->result()), 0.5, 1e-6);  // threshold 0.8
  EXPECT_EQ(options.metrics[4]->name(), "top2");
  KILN_EXPECT_ERROR(compile_options_from_training_config(R"({"loss": "mse", "optimizer_config": {"class_name": "SGD"},
      "metrics": [{"class_name": "Precision", "config": {"thresholds": [0.3, 0.6], "top_k": 2}}]})"),
                    ConfigError, "config key 'top_k' = 2 is not supported: Precision loads with top_k=null only");
  KILN_EXPECT_ERROR(compile_options_from_training_config(R"({"loss": "mse", "optimizer_config": {"class_name": "SGD"},
      "metrics": [{"class_name": "BinaryAccuracy", "config": {"treshold": 0.7}}]})"),
                    ConfigError, "BinaryAccuracy config has an unexpected key 'treshold'");
}

TEST(ConfusionMetricsTest, PrecisionAndRecallAtSeveralThresholdsGiveOneValuePerThreshold) {
  // The data of PrecisionAndRecallAtTheirThreshold at 0.3, 0.5, 0.8:
  // above 0.3: rows 0 2 3 4 (tp 2, fp 2, fn 1); above 0.5: rows 0 2 3 (tp 2, fp 1, fn 1);
  // above 0.8: row 0 (tp 1, fp 0, fn 2).
  Tensor y = f32({5}, {1, 1, 0, 1, 0}), p = f32({5}, {0.9f, 0.2f, 0.7f, 0.6f, 0.5f});
  Precision precision({0.3, 0.5, 0.8}, "precision");
  Recall recall({0.3, 0.5, 0.8}, "recall");
  precision.update_state(y, p);
  recall.update_state(y, p);
  const std::vector<double> pv = precision.result().to_vector<double>(), rv = recall.result().to_vector<double>();
  ASSERT_EQ(pv.size(), 3u);
  EXPECT_NEAR(pv[0], 0.5, 1e-6);
  EXPECT_NEAR(pv[1], 2.0 / 3, 1e-6);
  EXPECT_NEAR(pv[2], 1.0, 1e-6);
  EXPECT_NEAR(rv[0], 2.0 / 3, 1e-6);
  EXPECT_NEAR(rv[1], 2.0 / 3, 1e-6);
  EXPECT_NEAR(rv[2], 1.0 / 3, 1e-6);
  EXPECT_EQ(Precision().result().rank(), 0);  // one threshold: a scalar, as Keras's result[0]
  KILN_EXPECT_ERROR(Recall(std::vector<double>{0.2, 1.5}, "r"), ConfigError, "threshold must be in [0, 1]");
}

TEST(BinaryAccuracyTest, ComparesAtItsThreshold) {
  // Predictions 0.2 0.6 0.9 against labels 0 1 1: at 0.5 all right; at 0.7 the 0.6 is wrong.
  Tensor y = f32({3, 1}, {0, 1, 1}), p = f32({3, 1}, {0.2f, 0.6f, 0.9f});
  BinaryAccuracy half;
  BinaryAccuracy strict("strict", 0.7);
  half.update_state(y, p);
  strict.update_state(y, p);
  EXPECT_NEAR(scalar(half.result()), 1.0, 1e-6);
  EXPECT_NEAR(scalar(strict.result()), 2.0 / 3, 1e-6);
}

TEST(MetricNamesTest, MetricObjectsAreSavedWithTheirOptionsAndReadBack) {
  CompileOptions options{.optimizer = "sgd", .loss = "mse"};
  options.metrics = {"accuracy",
                     AUC({.num_thresholds = 7, .curve = "PR", .name = "pr"}),
                     Precision({0.25, 0.75}, "p2"),
                     Recall(0.3, "r3"),
                     BinaryAccuracy("ba", 0.4),
                     TopKCategoricalAccuracy(3, "top3")};
  const std::string tc = training_config_json(options);
  const nlohmann::json saved = nlohmann::json::parse(tc).at("metrics");
  EXPECT_EQ(saved[0], "accuracy");  // Keras 2 saves metrics compiled by name as names
  EXPECT_EQ(saved[1].at("class_name"), "AUC");
  EXPECT_EQ(saved[1].at("config").at("num_thresholds"), 7);
  EXPECT_EQ(saved[2].at("config").at("thresholds"), nlohmann::json({0.25, 0.75}));
  EXPECT_EQ(saved[3].at("config").at("thresholds"), 0.3);
  const CompileOptions back = compile_options_from_training_config(tc);
  ASSERT_EQ(back.metrics.size(), options.metrics.size());
  for (size_t i = 0; i < options.metrics.size(); ++i) {
    EXPECT_EQ(back.metrics[i]->name(), options.metrics[i]->name());
    EXPECT_EQ(back.metrics[i]->get_config(), options.metrics[i]->get_config());
  }
  EXPECT_EQ(dynamic_cast<const AUC&>(*back.metrics[1]).thresholds().size(), 7u);
  EXPECT_EQ(dynamic_cast<const BinaryAccuracy&>(*back.metrics[4]).threshold(), 0.4);
}

TEST(MetricNamesTest, VectorResultsAreLoggedPerThreshold) {
  Sequential model({InputLayer({.shape = {1}}), Dense(1, {.use_bias = false, .kernel_initializer = "ones"})});
  model.compile({.optimizer = "sgd", .loss = "mse", .metrics = {Precision({0.3, 0.8}, "p")}});
  // Predictions = x = 0.5, 0.9, 0.2 against labels 0, 1, 1: above 0.3 tp 1 fp 1; above 0.8 tp 1.
  const Logs logs = model.evaluate(HostTensor::from_vector<float>({3, 1}, {0.5f, 0.9f, 0.2f}),
                                   HostTensor::from_vector<float>({3, 1}, {0, 1, 1}), 3);
  EXPECT_NEAR(logs.at("p_0"), 0.5, 1e-6);
  EXPECT_NEAR(logs.at("p_1"), 1.0, 1e-6);
}

}  // namespace
}  // namespace kiln::keras::metrics
