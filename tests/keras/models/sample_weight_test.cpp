// sample_weight, class_weight and weighted_metrics as tf.keras 2.15 has them, for single- and
// multi-output models: losses and metrics against values worked out by hand on fixed weights,
// the forms (one array, a list per output, a map by name, Dataset elements) agreeing, a zero
// weight leaving its head's parameters bitwise unchanged, the mask combined with the weights,
// the log names, and the errors; and dict outputs (Keras's Model(inputs, {"a": ..., "b": ...})).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

HostTensor f32(Dims dims, std::vector<float> v) { return HostTensor::from_vector<float>(std::move(dims), v); }

// Two independent linear heads on x (2 features): each head's gradient is its own output's.
// a = x . (1, 2), b = x . (-1, 0.5) + 0.25.
std::unique_ptr<Functional> two_heads() {
  KerasTensor x = Input({2});
  auto model = std::make_unique<Functional>(std::vector<KerasTensor>{x},
                                            std::vector<KerasTensor>{Dense(1, {.name = "a"})(x), Dense(1, {.name = "b"})(x)});
  model->set_weights({f32({2, 1}, {1, 2}), f32({1}, {0}), f32({2, 1}, {-1, 0.5}), f32({1}, {0.25})});
  return model;
}

// The head a alone, as a single-output model.
std::unique_ptr<Functional> head_a() {
  KerasTensor x = Input({2});
  auto model = std::make_unique<Functional>(std::vector<KerasTensor>{x}, std::vector<KerasTensor>{Dense(1, {.name = "a"})(x)});
  model->set_weights({f32({2, 1}, {1, 2}), f32({1}, {0})});
  return model;
}

// Rows x = (1, 0), (0, 1), (1, 1), (2, -1): a = 1, 2, 3, 0 and b = -0.75, 0.75, -0.25, -2.25;
// the targets are 0, so a's squared errors are 1, 4, 9, 0 and b's 0.5625, 0.5625, 0.0625, 5.0625.
struct Rows {
  HostTensor x = f32({4, 2}, {1, 0, 0, 1, 1, 1, 2, -1});
  HostTensor ya = f32({4, 1}, {0, 0, 0, 0}), yb = f32({4, 1}, {0, 0, 0, 0});
  HostTensor wa = f32({4}, {1, 0, 2, 0.5}), wb = f32({4}, {0.5, 1, 0, 2});
};

// By hand, Keras's rules: a loss is sum(w * error^2) / rows (not / sum(w)); a weighted mean
// metric sum(w * value) / sum(w); an unweighted one ignores w.
constexpr double kLossA = (1 * 1 + 0 * 4 + 2 * 9 + 0.5 * 0) / 4.0;                   // 4.75
constexpr double kLossB = (0.5 * 0.5625 + 1 * 0.5625 + 0 * 0.0625 + 2 * 5.0625) / 4.0;  // 2.7421875
constexpr double kMaeA = (1 + 2 + 3 + 0) / 4.0;
constexpr double kWeightedMaeA = (1 * 1 + 0 * 2 + 2 * 3 + 0.5 * 0) / 3.5;               // 2
constexpr double kWeightedMaeB = (0.5 * 0.75 + 1 * 0.75 + 0 * 0.25 + 2 * 2.25) / 3.5;   // 1.6071...

CompileOptions two_head_options() {
  return {.optimizer = SGD({.learning_rate = 0.1}), .loss = "mse", .metrics_by_output = {{"a", {"mae"}}},
          .weighted_metrics = {"mae"}};
}

void expect_two_head_logs(const Logs& logs, const std::string& form) {
  SCOPED_TRACE(form);
  std::vector<std::string> names;
  for (const auto& [name, value] : logs) names.push_back(name);
  // tf.keras 2.15's names: a's weighted mae collides with its mae, so it is a_weighted_mae.
  EXPECT_EQ(names, (std::vector<std::string>{"loss", "a_loss", "b_loss", "a_mae", "a_weighted_mae", "b_mae"}));
  EXPECT_NEAR(logs.at("a_loss"), kLossA, 1e-5);
  EXPECT_NEAR(logs.at("b_loss"), kLossB, 1e-5);
  EXPECT_NEAR(logs.at("loss"), kLossA + kLossB, 1e-5);
  EXPECT_NEAR(logs.at("a_mae"), kMaeA, 1e-6);
  EXPECT_NEAR(logs.at("a_weighted_mae"), kWeightedMaeA, 1e-6);
  EXPECT_NEAR(logs.at("b_mae"), kWeightedMaeB, 1e-6);
}

TEST(SampleWeightTest, EachOutputsLossAndWeightedMetricsUseItsOwnWeightsInEveryForm) {
  const Rows r;
  auto model = two_heads();
  model->compile(two_head_options());
  const std::vector<HostTensor> ys{r.ya, r.yb};
  expect_two_head_logs(model->evaluate(r.x, ys, 4, {.verbose = 0, .sample_weight = {.per_output = {r.wa, r.wb}}}),
                       "list");
  expect_two_head_logs(
      model->evaluate(r.x, ys, 3, {.verbose = 0, .sample_weight = {.by_output = {{"b", r.wb}, {"a", r.wa}}}}), "map");
  expect_two_head_logs(model->evaluate(data::Dataset::from_tensor_slices({r.x, r.ya, r.yb, r.wa, r.wb}).batch(2),
                                       {.verbose = 0}),
                       "dataset (x, ya, yb, wa, wb)");
  // One array weighs every output: a's weights on b too.
  const Logs same = model->evaluate(r.x, ys, 4, {.verbose = 0, .sample_weight = {.all = r.wa}});
  EXPECT_NEAR(same.at("a_loss"), kLossA, 1e-5);
  EXPECT_NEAR(same.at("b_loss"), (1 * 0.5625 + 0 + 2 * 0.0625 + 0.5 * 5.0625) / 4.0, 1e-5);
  const Logs dataset_one = model->evaluate(data::Dataset::from_tensor_slices({r.x, r.ya, r.yb, r.wa}).batch(4), {.verbose = 0});
  EXPECT_EQ(dataset_one.items(), same.items());
  // Without weights the weighted metrics equal the unweighted ones, and the losses are plain means.
  const Logs plain = model->evaluate(r.x, ys, 4, {.verbose = 0});
  EXPECT_NEAR(plain.at("a_loss"), (1 + 4 + 9 + 0) / 4.0, 1e-5);
  EXPECT_EQ(plain.at("a_weighted_mae"), plain.at("a_mae"));
  // An output left out of the map is unweighted.
  const Logs only_b = model->evaluate(r.x, ys, 4, {.verbose = 0, .sample_weight = {.by_output = {{"b", r.wb}}}});
  EXPECT_NEAR(only_b.at("a_loss"), plain.at("a_loss"), 1e-6);
  EXPECT_NEAR(only_b.at("b_loss"), kLossB, 1e-5);
}

TEST(SampleWeightTest, AZeroWeightOnOneOutputLeavesThatHeadBitwiseUnchanged) {
  const Rows r;
  for (const bool dataset : {false, true}) {
    SCOPED_TRACE(dataset ? "dataset" : "arrays");
    auto model = two_heads();
    model->compile(two_head_options());
    const std::vector<HostTensor> before = model->get_weights();
    const HostTensor zeros = f32({4}, {0, 0, 0, 0});
    if (dataset)
      model->fit(data::Dataset::from_tensor_slices({r.x, r.ya, r.yb, r.wa, zeros}).batch(2), {.epochs = 3, .verbose = 0});
    else
      model->fit(r.x, std::vector<HostTensor>{r.ya, r.yb},
                 {.batch_size = 2, .epochs = 3, .verbose = 0, .sample_weight = {.per_output = {r.wa, zeros}}});
    const std::vector<HostTensor> after = model->get_weights();
    EXPECT_NE(after[0].to_vector<float>(), before[0].to_vector<float>());  // a trained
    for (size_t i = 2; i < 4; ++i) EXPECT_EQ(after[i].to_vector<float>(), before[i].to_vector<float>()) << i;
  }
}

TEST(SampleWeightTest, SingleOutputWeightedMetricsAreNamedAsKerasNamesThem) {
  const Rows r;
  const std::unique_ptr<Functional> owned = head_a();
  Functional& model = *owned;
  model.compile({.optimizer = SGD(), .loss = "mse", .metrics = {"mae"}, .weighted_metrics = {"mae", "mse"}});
  const Logs logs = model.evaluate(r.x, r.ya, 4, {.verbose = 0, .sample_weight = {.all = r.wa}});
  std::vector<std::string> names;
  for (const auto& [name, value] : logs) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"loss", "mae", "weighted_mae", "mse"}));
  EXPECT_NEAR(logs.at("loss"), kLossA, 1e-5);
  EXPECT_NEAR(logs.at("mae"), kMaeA, 1e-6);
  EXPECT_NEAR(logs.at("weighted_mae"), kWeightedMaeA, 1e-6);
  EXPECT_NEAR(logs.at("mse"), (1 * 1 + 2 * 9) / 3.5, 1e-5);
  // The weights survive a (x, y, w) Dataset the same way, and fit's first step logs them too.
  EXPECT_EQ(model.evaluate(data::Dataset::from_tensor_slices({r.x, r.ya, r.wa}).batch(4), {.verbose = 0}).items(),
            logs.items());
  const History h = model.fit(r.x, r.ya, {.batch_size = 4, .epochs = 1, .shuffle = false, .verbose = 0,
                                          .sample_weight = {.all = r.wa}});
  EXPECT_NEAR(h.history.at("loss")[0], kLossA, 1e-5);
  EXPECT_NEAR(h.history.at("weighted_mae")[0], kWeightedMaeA, 1e-6);
}

// 3-class logits x . K of Rows::x, and the labels class_weight weighs.
struct ClassRows {
  HostTensor kernel = f32({2, 3}, {0.5, -1, 0.25, 1, 0, -0.5});
  HostTensor labels = HostTensor::from_vector<int32_t>({4}, {0, 2, 1, 2});
  std::map<int64_t, double> class_weight{{0, 2.0}, {1, 0.5}, {2, 0.0}};
  // Keras's loss of one batch of the 4 rows: sum(class weight * w * cross-entropy) / 4, in f64.
  double expected_loss(const std::vector<float>& w) const {
    const Rows r;
    const std::vector<float> xs = r.x.to_vector<float>(), k = kernel.to_vector<float>();
    double loss = 0;
    for (int n = 0; n < 4; ++n) {
      double logits[3], lse = 0;
      for (int c = 0; c < 3; ++c) lse += std::exp(logits[c] = xs[n * 2] * k[c] + xs[n * 2 + 1] * k[3 + c]);
      const int label = labels.to_vector<int32_t>()[n];
      loss += class_weight.at(label) * (w.empty() ? 1.0 : w[n]) * (std::log(lse) - logits[label]) / 4;
    }
    return loss;
  }
  HostTensor one_hot() const {
    std::vector<float> rows(12, 0.0F);
    for (int n = 0; n < 4; ++n) rows[n * 3 + labels.to_vector<int32_t>()[n]] = 1;
    return f32({4, 3}, rows);
  }
};

TEST(SampleWeightTest, ClassWeightWeighsEachRowByItsClassTimesItsSampleWeight) {
  // 3-class logits x . K; the loss fit logs for its one step is the pre-update weighted mean.
  KerasTensor in = Input({2});
  Functional model({in}, Dense(3, {.use_bias = false, .name = "c"})(in));
  const Rows r;
  const ClassRows c;
  const HostTensor& kernel = c.kernel;
  const HostTensor& labels = c.labels;
  const std::map<int64_t, double>& class_weight = c.class_weight;
  const double expected = c.expected_loss(r.wa.to_vector<float>());
  for (const bool one_hot : {false, true}) {
    SCOPED_TRACE(one_hot ? "one-hot labels" : "sparse labels");
    model.set_weights({kernel});
    HostTensor y = labels;
    LossHandle loss = SparseCategoricalCrossentropy({.from_logits = true});
    if (one_hot) {
      y = c.one_hot();
      loss = CategoricalCrossentropy({.from_logits = true});
    }
    model.compile({.optimizer = SGD(), .loss = loss});
    const History h = model.fit(r.x, y, {.batch_size = 4, .epochs = 1, .shuffle = false, .verbose = 0,
                                         .sample_weight = {.all = r.wa}, .class_weight = class_weight});
    EXPECT_NEAR(h.history.at("loss")[0], expected, 1e-5);
  }
  KILN_EXPECT_ERROR(model.fit(r.x, labels, {.verbose = 0, .class_weight = {{0, 1.0}, {2, 1.0}}}), ValueError,
                    "expected class_weight to have the keys 0 to 1 (one per class), received key 2");
  KILN_EXPECT_ERROR(model.fit(r.x, labels, {.verbose = 0, .class_weight = {{0, 1.0}, {1, 1.0}}}), ValueError,
                    "class_weight has no weight for the label 2 of row 1");
}

TEST(SampleWeightTest, ClassWeightWeighsTheBatchesOfADatasetByTheirLabels) {
  // tf.keras 2.15 maps each batch (x, y) to (x, y, class weight of y), and (x, y, w) to
  // (x, y, w * class weight of y).
  KerasTensor in = Input({2});
  Functional model({in}, Dense(3, {.use_bias = false, .name = "c"})(in));
  const Rows r;
  const ClassRows c;
  for (const bool one_hot : {false, true})
    for (const bool weighted : {false, true}) {
      SCOPED_TRACE(std::string(one_hot ? "one-hot" : "sparse") + (weighted ? ", (x, y, w)" : ", (x, y)"));
      model.set_weights({c.kernel});
      const HostTensor y = one_hot ? c.one_hot() : c.labels;
      model.compile({.optimizer = SGD(), .loss = one_hot ? LossHandle(CategoricalCrossentropy({.from_logits = true}))
                                                         : LossHandle(SparseCategoricalCrossentropy({.from_logits = true}))});
      const data::Dataset ds = weighted ? data::Dataset::from_tensor_slices({r.x, y, r.wa}).batch(4)
                                        : data::Dataset::from_tensor_slices({r.x, y}).batch(4);
      const History h = model.fit(ds, {.verbose = 0, .class_weight = c.class_weight});
      EXPECT_NEAR(h.history.at("loss")[0], c.expected_loss(weighted ? r.wa.to_vector<float>() : std::vector<float>{}),
                  1e-5);
    }
  // Every label is class 2, which weighs 0: the loss and its gradient are 0, the kernel stays.
  model.set_weights({c.kernel});
  model.compile({.optimizer = SGD(), .loss = SparseCategoricalCrossentropy({.from_logits = true})});
  const HostTensor only_class_2 = HostTensor::from_vector<int32_t>({4}, {2, 2, 2, 2});
  model.fit(data::Dataset::from_tensor_slices({r.x, only_class_2}).batch(2), {.epochs = 2, .verbose = 0,
                                                                            .class_weight = c.class_weight});
  EXPECT_EQ(model.get_weights()[0].to_vector<float>(), c.kernel.to_vector<float>());
  KILN_EXPECT_ERROR(model.fit(data::Dataset::from_tensor_slices({r.x, c.labels}).batch(4),
                              {.verbose = 0, .class_weight = {{0, 1.0}, {1, 1.0}}}),
                    DataError, "class_weight has no weight for the label 2 of row 1");
  KILN_EXPECT_ERROR(model.fit(data::Dataset::from_tensor_slices({r.x, c.labels}).batch(4),
                              {.verbose = 0, .class_weight = {{1, 1.0}}}),
                    ValueError, "expected class_weight to have the keys 0 to 0 (one per class), received key 1");
}

TEST(SampleWeightTest, ValidationDataCarriesItsWeightsIntoTheValLossAndWeightedMetrics) {
  // A model a = x . (1, 2) that does not move (learning rate 0): its val_ values are Rows's
  // hand values: val_loss kLossA, val_weighted_mae kWeightedMaeA, val_mae the unweighted kMaeA.
  const Rows r;
  const std::unique_ptr<Functional> owned = head_a();
  Functional& model = *owned;
  model.compile({.optimizer = SGD({.learning_rate = 0.0}), .loss = "mse", .metrics = {"mae"}, .weighted_metrics = {"mae"}});
  auto expect_weighted = [](const History& h, const std::string& form) {
    SCOPED_TRACE(form);
    EXPECT_NEAR(h.history.at("val_loss")[0], kLossA, 1e-5);
    EXPECT_NEAR(h.history.at("val_weighted_mae")[0], kWeightedMaeA, 1e-6);
    EXPECT_NEAR(h.history.at("val_mae")[0], kMaeA, 1e-6);
  };
  expect_weighted(model.fit(r.x, r.ya, {.batch_size = 3, .validation_data = ValidationArrays{r.x, r.ya, r.wa},
                                        .verbose = 0}),
                  "arrays (x, y, w)");
  expect_weighted(model.fit(data::Dataset::from_tensor_slices({r.x, r.ya}).batch(4),
                            {.validation_data = data::Dataset::from_tensor_slices({r.x, r.ya, r.wa}).batch(3),
                             .verbose = 0}),
                  "dataset (x, y, w)");
  // Without weights: the plain mean, and the weighted mae equals the mae.
  const History plain = model.fit(r.x, r.ya, {.validation_data = ValidationArrays{r.x, r.ya}, .verbose = 0});
  EXPECT_NEAR(plain.history.at("val_loss")[0], (1 + 4 + 9 + 0) / 4.0, 1e-5);
  EXPECT_NEAR(plain.history.at("val_weighted_mae")[0], kMaeA, 1e-6);
  KILN_EXPECT_ERROR(model.fit(r.x, r.ya, {.validation_data = ValidationArrays{r.x, r.ya, f32({2}, {1, 1})}, .verbose = 0}),
                    ShapeError, "fit's validation_data's sample_weight expected 4 rows (one weight per example)");
}

TEST(SampleWeightTest, WeightedPrecisionAndRecallCountTheWeightsOfTheirRows) {
  // a = 1, 2, 3, 0 against labels 1, 0, 1, 1 at threshold 0.5; weights 1, 0, 2, 0.5.
  // Weighted: tp 1 + 2, fp 0, fn 0.5. Unweighted: tp 2, fp 1, fn 1.
  const Rows r;
  const std::unique_ptr<Functional> owned = head_a();
  Functional& model = *owned;
  model.compile({.optimizer = SGD(), .loss = "mse", .metrics = {metrics::Precision()},
                 .weighted_metrics = {metrics::Precision(), metrics::Recall(), metrics::AUC()}});
  const Logs logs = model.evaluate(r.x, f32({4, 1}, {1, 0, 1, 1}), 4, {.verbose = 0, .sample_weight = {.all = r.wa}});
  EXPECT_NEAR(logs.at("precision"), 2.0 / 3, 1e-6);
  EXPECT_NEAR(logs.at("weighted_precision"), 1.0, 1e-6);
  EXPECT_NEAR(logs.at("recall"), 3 / 3.5, 1e-6);
  // Row 1 (the one negative) weighs 0: no weighted negatives, so the false positive rate is 0 at
  // every threshold and the ROC area 0.
  EXPECT_NEAR(logs.at("auc"), 0.0, 1e-6);
}

TEST(SampleWeightTest, AMaskedOutputWeighsEachKeptStepBySampleWeightTimesMask) {
  // Embedding(mask_zero) -> LSTM(return_sequences) -> Dense: the output carries the mask. Keras:
  // the loss is sum(ce * w * mask) / kept steps, a weighted metric sum(right * w * mask) /
  // sum(w * mask), an unweighted one the mean over the kept steps.
  Sequential model({Embedding(6, 3, {.mask_zero = true}), LSTM(4, {.return_sequences = true}), Dense(5)});
  model.compile({.optimizer = SGD(), .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}, .weighted_metrics = {"accuracy"}});
  const HostTensor x = HostTensor::from_vector<int32_t>({2, 4}, {1, 2, 3, 0, 4, 5, 0, 0});
  const HostTensor y = HostTensor::from_vector<int32_t>({2, 4}, {1, 2, 3, 4, 0, 1, 2, 3});
  const HostTensor w = f32({2}, {2, 0.5});
  const std::vector<float> logits = model.predict(x).to_vector<float>();
  const std::vector<int32_t> ids = x.to_vector<int32_t>(), labels = y.to_vector<int32_t>();
  double loss = 0, right = 0, right_w = 0, kept = 0, kept_w = 0;
  for (size_t s = 0; s < ids.size(); ++s) {
    if (ids[s] == 0) continue;
    const double ws = s < 4 ? 2.0 : 0.5;
    const float* l = logits.data() + s * 5;
    double lse = 0;
    for (int c = 0; c < 5; ++c) lse += std::exp(static_cast<double>(l[c]));
    loss += ws * (std::log(lse) - l[labels[s]]);
    const double hit = static_cast<double>(std::max_element(l, l + 5) - l == labels[s]);
    right += hit;
    right_w += ws * hit;
    kept += 1;
    kept_w += ws;
  }
  const Logs logs = model.evaluate(x, y, 2, {.verbose = 0, .sample_weight = {.all = w}});
  EXPECT_NEAR(logs.at("loss"), loss / kept, 1e-5);
  EXPECT_NEAR(logs.at("accuracy"), right / kept, 1e-6);
  EXPECT_NEAR(logs.at("weighted_accuracy"), right_w / kept_w, 1e-6);
}

TEST(SampleWeightTest, WrongWeightsAreErrorsThatSayWhatIsWrong) {
  const Rows r;
  auto model = two_heads();
  model->compile(two_head_options());
  const std::vector<HostTensor> ys{r.ya, r.yb};
  KILN_EXPECT_ERROR(model->fit(r.x, ys, {.verbose = 0, .class_weight = {{0, 1.0}}}), ValueError,
                    "class_weight is only supported for Models with a single output (this one has 2: a, b)");
  KILN_EXPECT_ERROR(model->evaluate(r.x, ys, 4, {.verbose = 0, .sample_weight = {.per_output = {r.wa}}}), ValueError,
                    "received 1 sample_weight arrays for a model with 2 output(s) (a, b)");
  KILN_EXPECT_ERROR(model->evaluate(r.x, ys, 4, {.verbose = 0, .sample_weight = {.by_output = {{"c", r.wa}}}}),
                    ValueError, "sample_weight for an output named 'c'; the model's outputs are: a, b");
  KILN_EXPECT_ERROR(model->evaluate(r.x, ys, 4, {.verbose = 0, .sample_weight = {.all = f32({3}, {1, 1, 1})}}),
                    ShapeError, "expected 4 rows (one weight per example), received f32[3]");
  KILN_EXPECT_ERROR(
      model->evaluate(r.x, ys, 4, {.verbose = 0, .sample_weight = {.all = r.wa, .per_output = {r.wa, r.wb}}}), ValueError,
      "sample_weight in more than one form");
  KILN_EXPECT_ERROR(model->evaluate(data::Dataset::from_tensor_slices({r.x, r.ya, r.yb, r.wa, r.wb, r.wb}).batch(4),
                                    {.verbose = 0}),
                    DataError, "1 input(s), 2 label array(s) (one per output: a, b) and optionally the sample weights");
  KILN_EXPECT_ERROR(model->evaluate(data::Dataset::from_tensor_slices({r.x, r.ya, r.yb}).batch(4),
                                    {.verbose = 0, .sample_weight = {.all = r.wa}}),
                    ValueError, "evaluate received sample_weight with a Dataset");
  // class_weight is single-output for Datasets too.
  KILN_EXPECT_ERROR(model->fit(data::Dataset::from_tensor_slices({r.x, r.ya, r.yb}).batch(4),
                               {.verbose = 0, .class_weight = {{0, 1.0}}}),
                    ValueError, "class_weight is only supported for Models with a single output (this one has 2: a, b)");
  // Keras renames a weighted metric whose name is taken once; a second clash is an error.
  KerasTensor x = Input({2});
  Functional one({x}, Dense(1, {.name = "a"})(x));
  KILN_EXPECT_ERROR(one.compile({.optimizer = SGD(), .loss = "mse", .metrics = {"mae", metrics::MeanAbsoluteError("weighted_mae")},
                                 .weighted_metrics = {"mae"}}),
                    ValueError, "found two metrics with the same name: weighted_mae");
}

TEST(SampleWeightTest, WeightedMetricsSurviveSavingAsKerasWritesThem) {
  kiln::testing::TempDir dir;
  const Rows r;
  auto model = two_heads();
  model->compile(two_head_options());
  const Logs logs = model->evaluate(r.x, std::vector<HostTensor>{r.ya, r.yb}, 4,
                                    {.verbose = 0, .sample_weight = {.per_output = {r.wa, r.wb}}});
  for (const char* file : {"m.h5", "m.keras"}) {
    SCOPED_TRACE(file);
    model->save(dir.file(file));
    auto loaded = load_model(dir.file(file));
    EXPECT_EQ(loaded->evaluate(r.x, std::vector<HostTensor>{r.ya, r.yb}, 4,
                               {.verbose = 0, .sample_weight = {.per_output = {r.wa, r.wb}}})
                  .items(),
              logs.items());
  }
}

// Keras's Model(x, {"score": ..., "klass": ...}): outputs in key order, named by key.
std::unique_ptr<Functional> dict_model() {
  KerasTensor x = Input({2});
  auto model = std::make_unique<Functional>(
      std::vector<KerasTensor>{x},
      std::vector<std::pair<std::string, KerasTensor>>{{"score", Dense(1, {.name = "b"})(x)},
                                                       {"klass", Dense(1, {.name = "a"})(x)}});
  model->set_weights({f32({2, 1}, {1, 2}), f32({1}, {0}), f32({2, 1}, {-1, 0.5}), f32({1}, {0.25})});
  return model;
}

TEST(DictOutputsTest, OutputsGoByKeyInPredictLossesYAndWeights) {
  const Rows r;
  auto model = dict_model();
  EXPECT_EQ(model->output_names(), (std::vector<std::string>{"klass", "score"}));
  const std::map<std::string, HostTensor> out = model->predict_by_name(r.x);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out.at("klass").to_vector<float>(), (std::vector<float>{1, 2, 3, 0}));
  EXPECT_EQ(out.at("score").to_vector<float>(), (std::vector<float>{-0.75, 0.75, -0.25, -2.25}));
  model->compile({.optimizer = SGD(), .loss_by_output = {{"klass", "mse"}, {"score", "mse"}},
                  .loss_weight_by_output = {{"score", 2.0}}});
  const Logs logs = model->evaluate_by_name(r.x, std::map<std::string, HostTensor>{{"score", r.yb}, {"klass", r.ya}}, 4,
                                    {.verbose = 0, .sample_weight = {.by_output = {{"klass", r.wa}, {"score", r.wb}}}});
  EXPECT_NEAR(logs.at("klass_loss"), kLossA, 1e-5);
  EXPECT_NEAR(logs.at("score_loss"), kLossB, 1e-5);
  EXPECT_NEAR(logs.at("loss"), kLossA + 2 * kLossB, 1e-5);
  KILN_EXPECT_ERROR(model->evaluate_by_name(r.x, std::map<std::string, HostTensor>{{"klass", r.ya}}, 4, {.verbose = 0}),
                    ValueError, "received no y for the output 'score'; the model's outputs are: klass, score");
  KILN_EXPECT_ERROR(
      model->evaluate_by_name(r.x, std::map<std::string, HostTensor>{{"klass", r.ya}, {"score", r.yb}, {"a", r.ya}}, 4,
                      {.verbose = 0}),
      ValueError, "received y for an output named 'a'");
}

TEST(DictOutputsTest, ConfigH5AndKerasRoundTripsKeepTheDict) {
  kiln::testing::TempDir dir;
  const Rows r;
  auto model = dict_model();
  const nlohmann::json config = nlohmann::json::parse(model->to_json());
  // Keras writes a dict of outputs as a dict of [layer, node, tensor] references.
  EXPECT_EQ(config["config"]["output_layers"], nlohmann::json::parse(R"({"klass": ["a", 0, 0], "score": ["b", 0, 0]})"));
  auto rebuilt = Functional::from_json(model->to_json());
  EXPECT_EQ(rebuilt->output_names(), model->output_names());
  model->compile({.optimizer = SGD(), .loss_by_output = {{"klass", "mse"}, {"score", "mae"}}});
  const std::map<std::string, HostTensor> expected = model->predict_by_name(r.x);
  for (const char* file : {"m.h5", "m.keras", "m_dir"}) {
    SCOPED_TRACE(file);
    model->save(dir.file(file));
    auto loaded = load_model(dir.file(file));
    EXPECT_EQ(loaded->output_names(), (std::vector<std::string>{"klass", "score"}));
    const std::map<std::string, HostTensor> got = loaded->predict_by_name(r.x);
    for (const auto& [name, t] : expected) EXPECT_EQ(got.at(name).to_vector<float>(), t.to_vector<float>()) << name;
    EXPECT_EQ(loaded->compile_options().loss_by_output.size(), 2u);
  }
}

}  // namespace
}  // namespace kiln::keras
