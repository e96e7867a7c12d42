// Model::fit / evaluate under a MirroredStrategy: the seed model trained on 2 replicas of 32
// rows matches one replica on the global batch of 64 (weights, loss and metric logs), and a
// partial last batch is split unevenly and stays exact; a model saved on 2 replicas loads
// onto 1 or 4 and trains on exactly as it would have (S26).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "kiln/distribute/logical_devices.h"
#include "kiln/distribute/strategy.h"
#include "kiln/keras/metrics/confusion.h"
#include "kiln/keras/metrics/regression.h"
#include "kiln/runtime/cpu/cpu_backend.h"
#include "kiln/trace/trace_context.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/relative_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

std::unique_ptr<Sequential> seed_model() {
  return std::make_unique<Sequential>(std::vector<LayerHandle>{
      Flatten({.input_shape = {28, 28}}), Dense(128, {.activation = "relu"}), Dense(10)});
}

void compile_seed(Model& model, int steps_per_execution = 1) {
  model.compile({.optimizer = Adam(), .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}, .steps_per_execution = steps_per_execution});
}

std::pair<HostTensor, HostTensor> synthetic(int64_t n) { return testing::synthetic_mnist(n, 3); }

// The seed model compiled on one replica, and the same (same weights) made and compiled in the
// scope of a MirroredStrategy over the logical CPU devices.
struct SingleAndMirrored {
  std::unique_ptr<Sequential> single, mirrored;
  std::shared_ptr<distribute::Strategy> strategy;
};
SingleAndMirrored single_and_mirrored(const HostTensor& x, int mirrored_steps_per_execution = 1) {
  SingleAndMirrored m;
  m.single = seed_model();
  compile_seed(*m.single);
  m.single->predict(x.slice_rows(0, 8));  // builds the layers
  m.strategy = std::make_shared<distribute::MirroredStrategy>();
  {
    auto scope = m.strategy->scope();
    m.mirrored = seed_model();
    compile_seed(*m.mirrored, mirrored_steps_per_execution);
  }
  m.mirrored->predict(x.slice_rows(0, 8));
  m.mirrored->set_weights(m.single->get_weights());
  return m;
}

// Fits both models on `train` and expects the same logs, weights and evaluation.
void expect_same_training(Model& single, Model& mirrored, const data::Dataset& train, int epochs) {
  History h1 = single.fit(train, {.epochs = epochs, .verbose = 0});
  History h2 = mirrored.fit(train, {.epochs = epochs, .verbose = 0});
  for (const std::string key : {"loss", "accuracy"})
    for (size_t e = 0; e < static_cast<size_t>(epochs); ++e)
      EXPECT_NEAR(h2.history.at(key)[e], h1.history.at(key)[e], 1e-5) << key << " " << e;
  std::vector<HostTensor> w1 = single.get_weights(), w2 = mirrored.get_weights();
  for (size_t i = 0; i < w1.size(); ++i) EXPECT_LT(kiln::testing::relative_l2_error(w2[i], w1[i]), 1e-5) << i;
  Logs e1 = single.evaluate(train, {.verbose = 0});
  Logs e2 = mirrored.evaluate(train, {.verbose = 0});
  EXPECT_NEAR(e2.at("loss"), e1.at("loss"), 1e-5);
  EXPECT_NEAR(e2.at("accuracy"), e1.at("accuracy"), 1e-6);
}

class DistributedFitTest : public ::testing::Test {
 protected:
  void SetUp() override { config::set_logical_cpu_devices(2); }
  void TearDown() override { config::set_logical_cpu_devices(1); }
};

TEST_F(DistributedFitTest, StepsPerExecutionOnTwoReplicasTrainsLikeOneStepAtATime) {
  // 10 batches with k = 3: three 3-step loops (each replica's shards stacked) and one step.
  auto [x, y] = synthetic(640);
  auto [single, mirrored, strategy] = single_and_mirrored(x, /*mirrored_steps_per_execution=*/3);
  expect_same_training(*single, *mirrored, testing::batches(x, y, 64), 1);
  ASSERT_NE(mirrored->multi_step_train_function(), nullptr);
  EXPECT_EQ(mirrored->multi_step_train_function()->trace_count(), 1);
}

TEST_F(DistributedFitTest, TwoReplicasTrainLikeOneReplicaOnTheGlobalBatch) {
  auto [x, y] = synthetic(640);
  data::Dataset train = testing::batches(x, y, 64);
  auto [single, mirrored, strategy] = single_and_mirrored(x);
  ASSERT_EQ(mirrored->distribute_strategy(), strategy);
  expect_same_training(*single, *mirrored, train, /*epochs=*/2);
  for (const Variable& v : mirrored->weights()) {
    ASSERT_EQ(v.state()->mirrors.size(), 1u) << v.name();
    EXPECT_EQ(v.state()->mirrors[0].to_vector<float>(), v.storage().to_vector<float>()) << v.name();
  }
}

TEST_F(DistributedFitTest, RandomLayersDrawTheSameNumbersOnAnyReplicaCount) {
  auto [x, y] = synthetic(640);
  data::Dataset train = testing::batches(x, y, 64);
  // Dropout, GaussianNoise and SpatialDropout2D (on 4 channels of 4x4) after the hidden layer.
  const std::vector<std::function<std::vector<LayerHandle>()>> noisy = {
      [] { return std::vector<LayerHandle>{Dropout(0.5)}; },
      [] { return std::vector<LayerHandle>{GaussianNoise(0.5)}; },
      [] { return std::vector<LayerHandle>{Reshape({4, 4, 4}), SpatialDropout2D(0.5), Flatten()}; },
  };
  for (size_t k = 0; k < noisy.size(); ++k) {
    auto make = [&] {
      std::vector<LayerHandle> layers{Flatten({.input_shape = {28, 28}}), Dense(64, {.activation = "relu"})};
      for (LayerHandle& l : noisy[k]()) layers.push_back(std::move(l));
      layers.push_back(Dense(10));
      auto m = std::make_unique<Sequential>(std::move(layers));
      compile_seed(*m);
      return m;
    };
    auto single = make();
    single->fit(train, {.epochs = 1, .verbose = 0});
    std::unique_ptr<Sequential> mirrored;
    {
      auto scope = std::make_shared<distribute::MirroredStrategy>()->scope();
      mirrored = make();
    }
    mirrored->fit(train, {.epochs = 1, .verbose = 0});
    // Each replica's 32 rows got their rows of the 64-row draw; one replica drew it whole.
    std::vector<HostTensor> w1 = single->get_weights(), w2 = mirrored->get_weights();
    for (size_t i = 0; i < w1.size(); ++i) EXPECT_LT(kiln::testing::relative_l2_error(w2[i], w1[i]), 1e-5) << k << " " << i;
  }
}

TEST_F(DistributedFitTest, AModelSavedOnTwoReplicasResumesOnOneOrFour) {
  auto [x, y] = synthetic(640);
  data::Dataset train = testing::batches(x, y, 64);
  kiln::testing::TempDir dir;
  std::unique_ptr<Sequential> two;
  {
    auto scope = std::make_shared<distribute::MirroredStrategy>()->scope();
    two = seed_model();
    compile_seed(*two);
  }
  two->fit(train, {.epochs = 1, .verbose = 0});
  for (const std::string format : {"m.h5", "m_dir"}) two->save(dir.file(format));
  const HostTensor expected = two->predict(x.slice_rows(0, 16));
  two->fit(train, {.epochs = 1, .verbose = 0});  // the uninterrupted run's next epoch
  const std::vector<HostTensor> after = two->get_weights();

  for (const int replicas : {1, 4}) {
    for (const std::string format : {"m.h5", "m_dir"}) {
      SCOPED_TRACE(format + " onto " + std::to_string(replicas) + " replicas");
      config::set_logical_cpu_devices(replicas);
      std::shared_ptr<distribute::Strategy> strategy = std::make_shared<distribute::DefaultStrategy>();
      if (replicas > 1) strategy = std::make_shared<distribute::MirroredStrategy>();
      std::unique_ptr<Model> restored;
      {
        auto scope = strategy->scope();
        restored = load_model(dir.file(format));
      }
      const auto& on = restored->distribute_strategy();
      ASSERT_EQ(on ? on->num_replicas_in_sync() : 1, replicas);
      EXPECT_LT(kiln::testing::relative_l2_error(restored->predict(x.slice_rows(0, 16)), expected), 1e-6);
      // The optimizer's step and moments came along: one more epoch lands where the
      // uninterrupted 2-replica run did (up to the all-reduce's summation order).
      restored->fit(train, {.epochs = 1, .verbose = 0});
      const std::vector<HostTensor> w = restored->get_weights();
      ASSERT_EQ(w.size(), after.size());
      for (size_t i = 0; i < w.size(); ++i) EXPECT_LT(kiln::testing::relative_l2_error(w[i], after[i]), 1e-5) << i;
    }
  }
}

// A partial last batch on 4 replicas is split unevenly, as tf.distribute splits it: 1001 rows in
// batches of 128 end with 105 rows (27/26/26/26), 131 rows with 3 (one replica gets none, still
// joins the step's all-reduces and adds nothing). Loss, metrics and weights are those of one
// replica on the same global batches, and each shard shape compiles once, not once per epoch.
TEST_F(DistributedFitTest, APartialLastBatchIsSplitUnevenlyAndStaysExact) {
  config::set_logical_cpu_devices(4);
  for (const int64_t rows : {1001, 131}) {
    SCOPED_TRACE(rows);
    auto [x, y] = synthetic(rows);
    data::Dataset train = data::Dataset::from_tensor_slices({x, y}).batch(128);
    auto [single, mirrored, strategy] = single_and_mirrored(x);
    expect_same_training(*single, *mirrored, train, /*epochs=*/3);
    EXPECT_EQ(single->train_function()->trace_count(), 2);
    EXPECT_EQ(mirrored->train_function()->trace_count(), 2);
  }
}

// Every confusion, accuracy and regression metric (state summed over the replicas on read)
// logs the same on 2 replicas as on one replica over the same global batches, in fit and
// evaluate; Precision at two thresholds checks vector states too.
TEST_F(DistributedFitTest, MetricsMatchOneReplicaOnTheGlobalBatch) {
  auto [x, labels] = synthetic(256);
  HostTensor y(Shape(DType::kF32, {256, 1}));
  const std::vector<int32_t> digits = labels.astype(DType::kI32).to_vector<int32_t>();
  for (size_t i = 0; i < digits.size(); ++i) y.data<float>()[i] = static_cast<float>(digits[i] % 2);
  const data::Dataset train = data::Dataset::from_tensor_slices({x, y}).batch(64);
  auto make = [] {
    auto model = std::make_unique<Sequential>(std::vector<LayerHandle>{
        Flatten({.input_shape = {28, 28}}), Dense(8, {.activation = "relu"}), Dense(1, {.activation = "sigmoid"})});
    model->compile({.optimizer = SGD({.learning_rate = 0.05}), .loss = "binary_crossentropy",
                    .metrics = {metrics::Precision({0.3, 0.6}, "precision"), metrics::Recall(0.5, "recall"),
                                metrics::AUC({.num_thresholds = 50}), metrics::AUC({.curve = "PR", .name = "pr_auc"}),
                                BinaryAccuracy("binary_accuracy", 0.4), metrics::RootMeanSquaredError()}});
    return model;
  };
  std::unique_ptr<Sequential> single = make();
  single->predict(x.slice_rows(0, 8));
  std::unique_ptr<Sequential> mirrored;
  {
    auto scope = std::make_shared<distribute::MirroredStrategy>()->scope();
    mirrored = make();
  }
  mirrored->predict(x.slice_rows(0, 8));
  mirrored->set_weights(single->get_weights());
  const History h1 = single->fit(train, {.epochs = 2, .verbose = 0});
  const History h2 = mirrored->fit(train, {.epochs = 2, .verbose = 0});
  ASSERT_EQ(h1.history.size(), 8u);  // loss, precision_0, precision_1 and five more
  for (const auto& [key, values] : h1.history)
    for (size_t e = 0; e < values.size(); ++e) EXPECT_NEAR(h2.history.at(key)[e], values[e], 1e-5) << key << " " << e;
  const Logs e1 = single->evaluate(train, {.verbose = 0}), e2 = mirrored->evaluate(train, {.verbose = 0});
  for (const auto& [key, value] : e1) EXPECT_NEAR(e2.at(key), value, 1e-5) << key;
}

// A two-output model (its losses weighted, metrics per output) on 2 replicas logs what one
// replica logs on the global batch, per output too, and ends with the same weights.
TEST_F(DistributedFitTest, MultiOutputLogsMatchOneReplicaOnTheGlobalBatch) {
  auto [x, labels] = synthetic(200);
  HostTensor y_reg(Shape(DType::kF32, {200, 2}));  // regress each image's first two pixels
  for (size_t n = 0; n < 200; ++n)
    for (size_t k = 0; k < 2; ++k) y_reg.data<float>()[n * 2 + k] = x.data<float>()[n * 784 + k];
  auto make = [] {
    KerasTensor in = Input({28, 28});
    KerasTensor h = Dense(16, {.activation = "relu"})(Flatten()(in));
    auto m = std::make_unique<Functional>(std::vector<KerasTensor>{in},
                                          std::vector<KerasTensor>{Dense(10, {.name = "cls"})(h), Dense(2, {.name = "reg"})(h)});
    m->compile({.optimizer = Adam(),
                .losses = {SparseCategoricalCrossentropy({.from_logits = true}), "mse"},
                .loss_weights = {1.0, 0.5},
                .output_metrics = {{"accuracy"}, {"mae"}}});
    return m;
  };
  auto single = make();
  single->predict_outputs(x.slice_rows(0, 8));
  auto strategy = std::make_shared<distribute::MirroredStrategy>();
  std::unique_ptr<Functional> mirrored;
  {
    auto scope = strategy->scope();
    mirrored = make();
  }
  mirrored->predict_outputs(x.slice_rows(0, 8));
  mirrored->set_weights(single->get_weights());
  // 200 rows in batches of 64: the last batch of 8 splits 4 + 4.
  const History h1 = single->fit(x, {labels, y_reg}, {.batch_size = 64, .epochs = 2, .shuffle = false, .verbose = 0});
  const History h2 = mirrored->fit(x, {labels, y_reg}, {.batch_size = 64, .epochs = 2, .shuffle = false, .verbose = 0});
  ASSERT_EQ(h1.history.size(), 5u);
  for (const auto& [key, values] : h1.history)
    for (size_t e = 0; e < values.size(); ++e) EXPECT_NEAR(h2.history.at(key)[e], values[e], 1e-5) << key << " " << e;
  std::vector<HostTensor> w1 = single->get_weights(), w2 = mirrored->get_weights();
  for (size_t i = 0; i < w1.size(); ++i) EXPECT_LT(kiln::testing::relative_l2_error(w2[i], w1[i]), 1e-5) << i;
}

// A backend that compiles with the CPU backend and counts its programs.
class CountingBackend : public runtime::Backend {
 public:
  std::string name() const override { return "counting"; }
  const compiler::TargetInfo& target_info() const override { return cpu_->target_info(); }
  runtime::Device& device() override { return cpu_->device(); }
  std::unique_ptr<runtime::Executable> compile(std::unique_ptr<ir::Module> module,
                                               const runtime::CompileOptions& options) override {
    ++compiled;
    return cpu_->compile(std::move(module), options);
  }
  int compiled = 0;

 private:
  std::unique_ptr<runtime::Backend> cpu_ = cpu::make_cpu_backend();
};

// One replica whose device has its own backend, as MirroredStrategy({"cuda:0"}) on a machine
// with one GPU (auto_detect's choice there).
class OneDeviceStrategy : public distribute::Strategy {
 public:
  explicit OneDeviceStrategy(std::shared_ptr<runtime::Backend> backend)
      : Strategy(Config{.name = "OneDeviceStrategy", .backends = {std::move(backend)}}) {}
};

// The steps of a model made under a one-replica strategy compile for that replica's backend
// (fit, evaluate and predict), and train exactly as without a strategy.
TEST(OneReplicaStrategyTest, StepsCompileForTheReplicasBackend) {
  const auto [x, y] = synthetic(96);
  const data::Dataset train = data::Dataset::from_tensor_slices({x, y}).batch(32);
  auto plain = seed_model();
  compile_seed(*plain);
  plain->predict(x.slice_rows(0, 8));
  auto counting = std::make_shared<CountingBackend>();
  auto strategy = std::make_shared<OneDeviceStrategy>(counting);
  std::unique_ptr<Sequential> placed;
  {
    auto scope = strategy->scope();
    placed = seed_model();
    compile_seed(*placed);
  }
  placed->predict(x.slice_rows(0, 8));
  placed->set_weights(plain->get_weights());
  const int after_predict = counting->compiled;
  EXPECT_EQ(after_predict, 1);  // the predict step
  History h1 = plain->fit(train, {.epochs = 2, .verbose = 0});
  History h2 = placed->fit(train, {.epochs = 2, .verbose = 0});
  EXPECT_EQ(counting->compiled, after_predict + 1);  // the train step, once
  EXPECT_EQ(h1.history.at("loss"), h2.history.at("loss"));
  placed->evaluate(train, {.verbose = 0});
  EXPECT_EQ(counting->compiled, after_predict + 2);  // and the test step
  const std::vector<HostTensor> w1 = plain->get_weights(), w2 = placed->get_weights();
  for (size_t i = 0; i < w1.size(); ++i) EXPECT_EQ(w1[i].to_vector<float>(), w2[i].to_vector<float>()) << i;
}

}  // namespace
}  // namespace kiln::keras
