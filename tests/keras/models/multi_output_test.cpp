// Multi-output Functional models (Keras 2's keras.Model(inputs, [out_a, out_b])): the total
// and per-output losses against a hand-written f64 reference on fixed weights, the train
// step's gradients against f64 finite differences of that reference, loss_weights, the
// per-output logs and their names, predict_outputs, arity errors, and the config round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "kiln/keras/callbacks/csv_logger.h"
#include "kiln/keras/callbacks/tensor_board.h"
#include "tests/io/tfevents_decode.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

constexpr int64_t kRows = 4, kIn = 3, kHidden = 4, kA = 2, kB = 3;
constexpr double kL2 = 0.01;

// x -> trunk (relu, L2 on its kernel) -> a (regression, 2 values) and b (3-class logits).
std::unique_ptr<Functional> two_head_model() {
  KerasTensor x = Input({kIn});
  KerasTensor h = Dense(kHidden, {.activation = "relu", .kernel_regularizer = Regularizer{.l2 = kL2}, .name = "trunk"})(x);
  return std::make_unique<Functional>(std::vector<KerasTensor>{x},
                                      std::vector<KerasTensor>{Dense(kA, {.name = "a"})(h), Dense(kB, {.name = "b"})(h)});
}

HostTensor ramp_f32(Dims dims, double phase) {  // fixed, distinct values in [-0.9, 0.9]
  HostTensor t(Shape(DType::kF32, std::move(dims)));
  auto v = t.data<float>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(0.9 * std::sin(1.3 * static_cast<double>(i) + phase));
  return t;
}

struct Data {
  HostTensor x = ramp_f32({kRows, kIn}, 0.4), ya = ramp_f32({kRows, kA}, 2.0), yb{Shape(DType::kI32, {kRows})};
  Data() {
    const std::vector<int32_t> labels{2, 0, 1, 2};
    std::copy(labels.begin(), labels.end(), yb.data<int32_t>().begin());
  }
};

// The fixed weights: trunk kernel/bias, a kernel/bias, b kernel/bias (the model's weights() order).
std::vector<HostTensor> fixed_weights() {
  return {ramp_f32({kIn, kHidden}, 0.1), ramp_f32({kHidden}, 0.7), ramp_f32({kHidden, kA}, 1.1),
          ramp_f32({kA}, 1.9), ramp_f32({kHidden, kB}, 2.3), ramp_f32({kB}, 3.1)};
}

std::vector<std::vector<double>> as_f64(const std::vector<HostTensor>& ts) {
  std::vector<std::vector<double>> out;
  for (const HostTensor& t : ts) out.push_back(t.to_vector<double>());
  return out;
}

// Keras's losses written out in f64: mse over a, sparse crossentropy from logits over b, and
// the trunk kernel's L2 penalty. Returns {loss_a, loss_b, penalty}.
struct Reference {
  double a = 0, b = 0, penalty = 0;
  double total(double wa, double wb) const { return wa * a + wb * b + penalty; }
};
Reference reference(const std::vector<std::vector<double>>& w, const Data& d) {
  const std::vector<double> x = d.x.to_vector<double>(), ya = d.ya.to_vector<double>();
  const std::vector<int32_t> yb = d.yb.to_vector<int32_t>();
  Reference r;
  for (int64_t n = 0; n < kRows; ++n) {
    std::vector<double> h(kHidden);
    for (int64_t j = 0; j < kHidden; ++j) {
      double s = w[1][j];
      for (int64_t i = 0; i < kIn; ++i) s += x[n * kIn + i] * w[0][i * kHidden + j];
      h[j] = std::max(0.0, s);
    }
    auto head = [&](const std::vector<double>& kernel, const std::vector<double>& bias, int64_t units) {
      std::vector<double> out(units);
      for (int64_t u = 0; u < units; ++u) {
        out[u] = bias[u];
        for (int64_t j = 0; j < kHidden; ++j) out[u] += h[j] * kernel[j * units + u];
      }
      return out;
    };
    const std::vector<double> pa = head(w[2], w[3], kA), pb = head(w[4], w[5], kB);
    for (int64_t u = 0; u < kA; ++u) r.a += std::pow(pa[u] - ya[n * kA + u], 2) / (kA * kRows);
    double sum_exp = 0;
    for (double v : pb) sum_exp += std::exp(v);
    r.b += (std::log(sum_exp) - pb[yb[n]]) / kRows;
  }
  for (double v : w[0]) r.penalty += kL2 * v * v;
  return r;
}

std::unique_ptr<Functional> compiled_model(CompileOptions options) {
  auto model = two_head_model();
  model->set_weights(fixed_weights());
  model->compile(std::move(options));
  return model;
}

CompileOptions weighted_options(double wa, double wb) {
  return {.optimizer = SGD({.learning_rate = 1.0}),
          .losses = {"mse", SparseCategoricalCrossentropy({.from_logits = true})},
          .loss_weights = {wa, wb}};
}

TEST(MultiOutputTest, OutputsAreNamedAfterTheirLayersAndPredictReturnsOnePerOutput) {
  auto model = two_head_model();
  EXPECT_EQ(model->output_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(model->num_outputs(), 2u);
  const Data d;
  // Batch-invariant predict gives an eager call's bits whatever the batch size (docs/numerics.md).
  const std::vector<HostTensor> out = model->predict_outputs(d.x, {.batch_size = 3, .batch_invariant = true});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), Shape(DType::kF32, {kRows, kA}));
  EXPECT_EQ(out[1].shape(), Shape(DType::kF32, {kRows, kB}));
  const std::vector<Tensor> called = model->call_outputs({Tensor(d.x)}, /*training=*/false);
  EXPECT_EQ(called[1].to_vector<float>(), out[1].to_vector<float>());
  KILN_EXPECT_ERROR(model->predict(d.x), ValueError, "predict_outputs returns one tensor per output");
  KILN_EXPECT_ERROR(model->output(), ValueError, "has 2 outputs");
}

TEST(MultiOutputTest, TotalLossIsTheWeightedSumOfTheOutputLossesPlusRegularization) {
  const Data d;
  auto model = compiled_model(weighted_options(0.5, 2.0));
  const Reference r = reference(as_f64(fixed_weights()), d);
  const Logs logs = model->evaluate(d.x, {d.ya, d.yb}, kRows, {.verbose = 0});
  EXPECT_NEAR(logs.at("a_loss"), r.a, 1e-6 * (1 + r.a));
  EXPECT_NEAR(logs.at("b_loss"), r.b, 1e-6 * (1 + r.b));
  EXPECT_NEAR(logs.at("loss"), r.total(0.5, 2.0), 1e-6 * (1 + r.total(0.5, 2.0)));
  EXPECT_GT(r.penalty, 1e-3);  // the penalty counts in the check above
  std::vector<std::string> names;
  for (const auto& [name, value] : logs) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"loss", "a_loss", "b_loss"}));
}

TEST(MultiOutputTest, TrainStepGradientsMatchF64FiniteDifferences) {
  // SGD with learning rate 1 moves each weight by minus its gradient of the total loss.
  const Data d;
  const double wa = 0.5, wb = 2.0;
  auto model = compiled_model(weighted_options(wa, wb));
  model->fit(d.x, {d.ya, d.yb}, {.batch_size = kRows, .shuffle = false, .verbose = 0});
  const std::vector<std::vector<double>> before = as_f64(fixed_weights()), after = as_f64(model->get_weights());
  const double eps = 1e-6;
  for (size_t k = 0; k < before.size(); ++k)
    for (size_t i = 0; i < before[k].size(); ++i) {
      std::vector<std::vector<double>> plus = before, minus = before;
      plus[k][i] += eps;
      minus[k][i] -= eps;
      const double fd = (reference(plus, d).total(wa, wb) - reference(minus, d).total(wa, wb)) / (2 * eps);
      EXPECT_NEAR(before[k][i] - after[k][i], fd, 2e-5 + 1e-4 * std::fabs(fd)) << "weight " << k << " element " << i;
    }
}

TEST(MultiOutputTest, ZeroLossWeightLeavesTheOtherHeadUnchanged) {
  // As in Keras: a head whose loss weighs 0 gets zero gradients, which SGD and Adam (zero
  // moments) apply as no change.
  const Data d;
  for (const OptimizerHandle& optimizer : {OptimizerHandle(SGD()), OptimizerHandle(Adam())}) {
    CompileOptions options = weighted_options(1.0, 0.0);
    options.optimizer = optimizer;
    auto model = compiled_model(std::move(options));
    model->fit(d.x, {d.ya, d.yb}, {.batch_size = 2, .epochs = 2, .verbose = 0});
    const std::vector<HostTensor> w0 = fixed_weights(), w = model->get_weights();
    for (size_t k : {4, 5}) EXPECT_EQ(w[k].to_vector<float>(), w0[k].to_vector<float>()) << optimizer->class_name() << " b's weight " << k;
    for (size_t k : {0, 2, 3}) EXPECT_NE(w[k].to_vector<float>(), w0[k].to_vector<float>()) << optimizer->class_name() << " weight " << k;
  }
}

TEST(MultiOutputTest, LogsAreNamedAsKeras2NamesThemForHistoryCallbacksAndValidation) {
  const Data d;
  auto model = compiled_model({.optimizer = SGD(),
                               .loss_by_output = {{"a", "mse"}, {"b", SparseCategoricalCrossentropy({.from_logits = true})}},
                               .metrics_by_output = {{"a", {"mae"}}, {"b", {"accuracy"}}}});
  kiln::testing::TempDir dir;
  const History h = model->fit(d.x, {d.ya, d.yb},
                               {.batch_size = 2, .epochs = 2, .validation_split = 0.5,
                                .callbacks = {CSVLogger(dir.file("log.csv"))}, .verbose = 0});
  std::vector<std::string> keys;
  for (const auto& [key, values] : h.history) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"a_loss", "a_mae", "b_accuracy", "b_loss", "loss",
                                            "val_a_loss", "val_a_mae", "val_b_accuracy", "val_b_loss",
                                            "val_loss"}));
  std::ifstream csv(dir.file("log.csv"));
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "epoch,a_loss,a_mae,b_accuracy,b_loss,loss,val_a_loss,val_a_mae,"
                    "val_b_accuracy,val_b_loss,val_loss");
  // With unit weights the loss is a_loss + b_loss + the trunk kernel's L2 penalty.
  const Logs e = model->evaluate(d.x, {d.ya, d.yb}, kRows, {.verbose = 0});
  const Reference r = reference(as_f64(model->get_weights()), d);
  EXPECT_NEAR(e.at("loss"), r.total(1, 1), 1e-5);
}

TEST(MultiOutputTest, TensorBoardWritesEveryOutputsScalars) {
  if (!io::testing::python_has("google.protobuf")) GTEST_SKIP() << "/usr/bin/python3 lacks protobuf";
  const Data d;
  auto model = compiled_model(weighted_options(0.5, 2.0));
  kiln::testing::TempDir dir;
  const History h = model->fit(d.x, {d.ya, d.yb},
                               {.batch_size = 2, .epochs = 2, .callbacks = {TensorBoard(dir.file("logs"))}, .verbose = 0});
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() / "logs" / "train")) files.push_back(e.path().string());
  const nlohmann::json decoded = io::testing::decode_event_files(files, dir.file("train.json"));
  ASSERT_EQ(decoded.size(), 1u);
  for (const std::string name : {"loss", "a_loss", "b_loss"}) {
    std::vector<std::pair<int64_t, double>> want;
    for (int64_t e = 0; e < 2; ++e) want.emplace_back(e, static_cast<float>(h.history.at(name)[static_cast<size_t>(e)]));
    EXPECT_EQ(io::testing::scalars(decoded[0]["events"], "epoch_" + name), want) << name;
  }
}

TEST(MultiOutputTest, AFlatMetricListAppliesToEveryOutputWithItsOwnState) {
  const Data d;
  HostTensor ya_labels(Shape(DType::kI32, {kRows}));
  std::vector<int32_t> labels{1, 1, 0, 0};
  std::copy(labels.begin(), labels.end(), ya_labels.data<int32_t>().begin());
  auto model = compiled_model({.optimizer = SGD(), .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                               .metrics = {"accuracy"}});
  const Logs logs = model->evaluate(d.x, {ya_labels, d.yb}, kRows, {.verbose = 0});
  std::vector<std::string> names;
  for (const auto& [name, value] : logs) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"loss", "a_loss", "b_loss", "a_accuracy", "b_accuracy"}));
  // Each accuracy against argmax of its own head.
  const std::vector<HostTensor> p = model->predict_outputs(d.x);
  auto accuracy = [](const HostTensor& logits, const std::vector<int32_t>& y) {
    const std::vector<float> v = logits.to_vector<float>();
    const auto units = static_cast<size_t>(logits.dims()[1]);
    double hits = 0;
    for (size_t n = 0; n < y.size(); ++n) {
      auto row = v.begin() + static_cast<std::ptrdiff_t>(n * units);
      hits += (std::max_element(row, row + static_cast<std::ptrdiff_t>(units)) - row) == y[n];
    }
    return hits / static_cast<double>(y.size());
  };
  EXPECT_DOUBLE_EQ(logs.at("a_accuracy"), accuracy(p[0], labels));
  EXPECT_DOUBLE_EQ(logs.at("b_accuracy"), accuracy(p[1], d.yb.to_vector<int32_t>()));
}

TEST(MultiOutputTest, DatasetElementsCarryOneLabelPerOutput) {
  const Data d;
  auto from_arrays = compiled_model(weighted_options(0.5, 2.0));
  auto from_dataset = compiled_model(weighted_options(0.5, 2.0));
  from_arrays->fit(d.x, {d.ya, d.yb}, {.batch_size = 2, .shuffle = false, .verbose = 0});
  from_dataset->fit(data::Dataset::from_tensor_slices({d.x, d.ya, d.yb}).batch(2), {.verbose = 0});
  const std::vector<HostTensor> w1 = from_arrays->get_weights(), w2 = from_dataset->get_weights();
  for (size_t k = 0; k < w1.size(); ++k) EXPECT_EQ(w1[k].to_vector<float>(), w2[k].to_vector<float>()) << k;
  KILN_EXPECT_ERROR(from_dataset->evaluate(data::Dataset::from_tensor_slices({d.x, d.ya}).batch(2), {.verbose = 0}),
                    DataError, "2 label array(s) (one per output: a, b)");
}

TEST(MultiOutputTest, StepsPerExecutionTrainsLikeOneStepAtATime) {
  const Data d;
  auto one = compiled_model(weighted_options(0.5, 2.0));
  CompileOptions k2 = weighted_options(0.5, 2.0);
  k2.steps_per_execution = 2;
  auto two = compiled_model(std::move(k2));
  const History h1 = one->fit(d.x, {d.ya, d.yb}, {.batch_size = 1, .shuffle = false, .verbose = 0});
  const History h2 = two->fit(d.x, {d.ya, d.yb}, {.batch_size = 1, .shuffle = false, .verbose = 0});
  ASSERT_NE(two->multi_step_train_function(), nullptr);
  for (const auto& [key, values] : h1.history) EXPECT_NEAR(h2.history.at(key)[0], values[0], 1e-6) << key;
  const std::vector<HostTensor> w1 = one->get_weights(), w2 = two->get_weights();
  for (size_t k = 0; k < w1.size(); ++k) {
    const std::vector<float> a = w1[k].to_vector<float>(), b = w2[k].to_vector<float>();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 1e-6) << k << " " << i;
  }
}

TEST(MultiOutputTest, ArityAndOutputNameErrorsSayWhatIsExpected) {
  const Data d;
  auto model = compiled_model(weighted_options(1, 1));
  KILN_EXPECT_ERROR(model->fit(d.x, {d.ya}, {.verbose = 0}), ValueError,
                    "received 1 y array(s) for a model with 2 output(s) (a, b)");
  KILN_EXPECT_ERROR(model->evaluate(d.x, d.ya, 2, {.verbose = 0}), ValueError, "1 y array(s)");
  KILN_EXPECT_ERROR(compiled_model({.losses = {"mse"}}), ValueError, "1 entries in losses for a model with 2 output(s)");
  KILN_EXPECT_ERROR(compiled_model({.loss_by_output = {{"a", "mse"}, {"c", "mse"}}}), ValueError,
                    "losses for an output named 'c'; the model's outputs are: a, b");
  KILN_EXPECT_ERROR(compiled_model({.loss = "mse", .loss_weight_by_output = {{"head", 1.0}}}), ValueError,
                    "loss_weights for an output named 'head'");
  KILN_EXPECT_ERROR(compiled_model({.loss = "mse", .losses = {"mse", "mse"}}), ValueError, "more than one of loss");
  KILN_EXPECT_ERROR(compiled_model({.losses = {LossHandle(), LossHandle()}}), ValueError, "no loss for any output");
}

TEST(MultiOutputTest, AnOutputWithoutALossAddsNothingAndIsNotLogged) {
  const Data d;
  auto model = compiled_model({.optimizer = SGD(), .loss_by_output = {{"a", "mse"}}});
  const Logs logs = model->evaluate(d.x, {d.ya, d.yb}, kRows, {.verbose = 0});
  const Reference r = reference(as_f64(fixed_weights()), d);
  EXPECT_FALSE(logs.contains("b_loss"));
  EXPECT_NEAR(logs.at("loss"), r.a + r.penalty, 1e-6);
}

TEST(MultiOutputTest, ConfigRoundTripKeepsEveryOutputAndThePredictions) {
  auto model = two_head_model();
  model->set_weights(fixed_weights());
  const std::string json = model->to_json();
  EXPECT_NE(json.find(R"("output_layers":[["a",0,0],["b",0,0]])"), std::string::npos) << json;
  auto loaded = Functional::from_json(json);
  loaded->set_weights(model->get_weights());
  EXPECT_EQ(loaded->to_json(), json);
  const Data d;
  const std::vector<HostTensor> p1 = model->predict_outputs(d.x), p2 = loaded->predict_outputs(d.x);
  for (size_t o = 0; o < 2; ++o) EXPECT_EQ(p1[o].to_vector<float>(), p2[o].to_vector<float>()) << o;
}

TEST(MultiOutputTest, SummaryShowsTheConnectionsOfBothHeads) {
  auto model = two_head_model();
  const std::string text = model->summary_text();
  EXPECT_NE(text.find("Connected to"), std::string::npos) << text;
  EXPECT_NE(text.find("a (Dense)                       (None, 2)            10          trunk[0][0]"), std::string::npos) << text;
  EXPECT_NE(text.find("b (Dense)                       (None, 3)            15          trunk[0][0]"), std::string::npos) << text;
}

}  // namespace
}  // namespace kiln::keras
