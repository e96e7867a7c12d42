// Callbacks: EarlyStopping on a plateau, ReduceLROnPlateau against Keras's rule by hand,
// TerminateOnNaN, CSVLogger rows, LearningRateScheduler, Progbar text.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <sstream>

#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

// y = 2x on 64 points in 8 batches: a model small enough to compile in a moment.
data::Dataset linear_data() {
  std::vector<float> xs(64), ys(64);
  for (int i = 0; i < 64; ++i) {
    xs[static_cast<size_t>(i)] = static_cast<float>(i) / 64.0f;
    ys[static_cast<size_t>(i)] = 2.0f * xs[static_cast<size_t>(i)];
  }
  return data::Dataset::from_tensor_slices({HostTensor::from_vector<float>({64, 1}, xs),
                                            HostTensor::from_vector<float>({64, 1}, ys)})
      .batch(8, /*drop_remainder=*/true);
}

std::unique_ptr<Sequential> linear_model(double learning_rate) {
  auto model = std::make_unique<Sequential>(std::vector<LayerHandle>{Dense(1, {.input_shape = {1}})});
  model->compile({.optimizer = SGD({.learning_rate = learning_rate}), .loss = "mse"});
  return model;
}

TEST(EarlyStoppingTest, StopsWhenTheLossPlateaus) {
  auto model = linear_model(0.0);  // lr 0: the loss never moves
  auto stop = std::make_shared<EarlyStopping>(EarlyStoppingOptions{.monitor = "loss", .patience = 2});
  History h = model->fit(linear_data(), {.epochs = 20, .callbacks = {stop}, .verbose = 0});
  EXPECT_EQ(h.epoch.size(), 3u);  // epoch 0 sets the best, epochs 1 and 2 wait
  EXPECT_EQ(stop->stopped_epoch(), 2);
}

TEST(EarlyStoppingTest, KeepsTrainingWhileTheLossImprovesAndRestoresTheBestWeights) {
  auto model = linear_model(0.1);
  auto stop = std::make_shared<EarlyStopping>(
      EarlyStoppingOptions{.monitor = "loss", .patience = 1, .restore_best_weights = true});
  History h = model->fit(linear_data(), {.epochs = 4, .callbacks = {stop}, .verbose = 0});
  EXPECT_EQ(h.epoch.size(), 4u);
  EXPECT_EQ(stop->stopped_epoch(), 0);
}

TEST(EarlyStoppingTest, MonitoringAMissingValueNamesWhatIsThere) {
  auto model = linear_model(0.1);
  auto stop = std::make_shared<EarlyStopping>(EarlyStoppingOptions{.monitor = "val_loss"});
  try {
    model->fit(linear_data(), {.epochs = 1, .callbacks = {stop}, .verbose = 0});
    ADD_FAILURE() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("the logs hold: loss"), std::string::npos) << e.what();
  }
}

TEST(ReduceLROnPlateauTest, FollowsKerasRuleWithPatienceCooldownAndMinLr) {
  auto model = linear_model(0.1);
  ReduceLROnPlateau reduce({.factor = 0.5, .patience = 2, .cooldown = 1, .min_lr = 0.02});
  reduce.set_model(model.get());
  reduce.on_train_begin(Logs{});
  // Worked by hand from Keras 2's on_epoch_end: a reduction at the 2nd epoch without
  // improvement, one cooldown epoch that still counts once it has ended (epochs 3-4), an
  // improvement resetting the wait (epoch 5), min_lr clamping (epoch 7) and then holding.
  const std::vector<double> val_loss = {1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5};
  const std::vector<double> expected = {0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.025, 0.02, 0.02, 0.02};
  for (size_t epoch = 0; epoch < val_loss.size(); ++epoch) {
    Logs logs;
    logs.set("val_loss", val_loss[epoch]);
    reduce.on_epoch_end(static_cast<int>(epoch), logs);
    EXPECT_NEAR(model->optimizer()->learning_rate(), expected[epoch], 1e-8) << "after epoch " << epoch;  // an f32 variable
  }
  EXPECT_EQ(reduce.best(), 0.5);
}

TEST(ReduceLROnPlateauTest, ReducesTheRateTheCompiledStepUsesInFit) {
  auto model = linear_model(1e-9);  // the loss barely moves: a plateau from the start
  auto reduce = std::make_shared<ReduceLROnPlateau>(ReduceLROnPlateauOptions{.monitor = "loss", .patience = 1});
  model->fit(linear_data(), {.epochs = 3, .callbacks = {reduce}, .verbose = 0});
  EXPECT_NEAR(model->optimizer()->learning_rate(), 1e-11, 1e-15);
  // The step reads the rate each call: with it at 0 the weights stop moving.
  model->optimizer()->set_learning_rate(0.0);
  const std::vector<HostTensor> before = model->get_weights();
  model->fit(linear_data(), {.epochs = 1, .verbose = 0});
  EXPECT_EQ(model->get_weights()[0].to_vector<float>(), before[0].to_vector<float>());
}

TEST(ReduceLROnPlateauTest, RejectsAFactorOfOneAndASchedule) {
  KILN_EXPECT_ERROR(ReduceLROnPlateau({.factor = 1.0}), ValueError, "factor must be below 1.0");
  auto model = std::make_unique<Sequential>(std::vector<LayerHandle>{Dense(1, {.input_shape = {1}})});
  model->compile({.optimizer = SGD({.learning_rate = CosineDecay(1e-9, 100)}), .loss = "mse"});  // a plateau
  auto reduce = std::make_shared<ReduceLROnPlateau>(ReduceLROnPlateauOptions{.monitor = "loss", .patience = 0});
  KILN_EXPECT_ERROR(model->fit(linear_data(), {.epochs = 2, .callbacks = {reduce}, .verbose = 0}), ValueError,
                    "uses a LearningRateSchedule");
}

TEST(TerminateOnNaNTest, StopsAfterTheFirstBatchWithANonFiniteLoss) {
  std::vector<float> xs(64, 0.5f), ys(64, 1.0f);
  xs[20] = std::numeric_limits<float>::quiet_NaN();  // in batch 2 of 8 rows
  data::Dataset d = data::Dataset::from_tensor_slices({HostTensor::from_vector<float>({64, 1}, xs),
                                                       HostTensor::from_vector<float>({64, 1}, ys)})
                        .batch(8, /*drop_remainder=*/true);
  auto model = linear_model(0.1);
  int64_t batches = 0;
  History h = model->fit(d, {.epochs = 3,
                             .callbacks = {std::make_shared<TerminateOnNaN>(),
                                           LambdaCallback({.on_train_batch_end = [&](int64_t, const Logs&) { ++batches; }})},
                             .verbose = 0});
  EXPECT_EQ(batches, 3);
  EXPECT_EQ(h.epoch.size(), 1u);
}

TEST(CSVLoggerTest, WritesOneRowPerEpochWithSortedColumns) {
  const std::string path = ::testing::TempDir() + "/keras_csv_logger_test.csv";
  auto model = linear_model(0.1);
  model->compile({.optimizer = SGD({.learning_rate = 0.1}), .loss = "mse", .metrics = {Mean("zeta"), "accuracy"}});
  model->fit(linear_data(), {.epochs = 2, .callbacks = {CSVLogger(path)}, .verbose = 0});
  std::ifstream in(path);
  std::string header, row0, row1;
  std::getline(in, header);
  std::getline(in, row0);
  std::getline(in, row1);
  EXPECT_EQ(header, "epoch,accuracy,loss,zeta");
  EXPECT_EQ(row0.substr(0, 2), "0,");
  EXPECT_EQ(row1.substr(0, 2), "1,");
}

TEST(LearningRateSchedulerTest, SetsTheRateAtEachEpochBegin) {
  auto model = linear_model(0.1);
  std::vector<double> rates;
  model->fit(linear_data(), {.epochs = 3,
                             .callbacks = {LearningRateScheduler([](int epoch, double lr) { return epoch == 0 ? lr : lr / 2; }),
                                           LambdaCallback({.on_epoch_end = [&](int, const Logs&) {
                                             rates.push_back(0);
                                           }})},
                             .verbose = 0});
  EXPECT_NEAR(model->optimizer()->learning_rate(), 0.025, 1e-7);
  EXPECT_EQ(rates.size(), 3u);
}

TEST(ProgbarTest, FormatsTheKerasLine) {
  Logs logs;
  logs.set("loss", 0.29034);
  logs.set("accuracy", 0.91712);
  EXPECT_EQ(Progbar::format(468, 468, 2.2, logs, /*finalize=*/true),
            "468/468 [==============================] - 2s 5ms/step - loss: 0.2903 - accuracy: 0.9171");
  EXPECT_EQ(Progbar::format(234, 468, 10, logs, /*finalize=*/false).substr(0, 53),
            "234/468 [==============>...............] - ETA: 10s -");
}

TEST(ProgbarLoggerTest, PrintsEpochHeaderAndOneLinePerEpochWhenNotATerminal) {
  auto model = linear_model(0.1);
  ::testing::internal::CaptureStdout();
  model->fit(linear_data(), {.epochs = 2, .verbose = 2});
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("Epoch 1/2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Epoch 2/2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("8/8 [="), std::string::npos) << out;  // the dataset's cardinality
  EXPECT_EQ(out.find("Unknown"), std::string::npos) << out;
  EXPECT_NE(out.find("samples/s - input wait"), std::string::npos) << out;
}

// A dataset of unknown length shows N/Unknown in its first epoch only (Keras's inferred steps);
// fit(x, y) knows its steps from the start.
TEST(ProgbarLoggerTest, StepsUnknownInTheFirstEpochAreKnownInTheNext) {
  auto model = linear_model(0.1);
  data::Dataset unknown = linear_data().filter([](const data::Element&) { return true; });
  ASSERT_EQ(unknown.cardinality(), data::kUnknownCardinality);
  ::testing::internal::CaptureStdout();
  model->fit(unknown, {.epochs = 2, .verbose = 2});
  std::string out = ::testing::internal::GetCapturedStdout();
  const size_t second = out.find("Epoch 2/2");
  ASSERT_NE(second, std::string::npos) << out;
  EXPECT_NE(out.substr(0, second).find("8/Unknown - "), std::string::npos) << out;
  EXPECT_NE(out.substr(second).find("8/8 [="), std::string::npos) << out;

  HostTensor x(Shape(DType::kF32, {85 * 32 - 5, 1})), y(Shape(DType::kF32, {85 * 32 - 5, 1}));
  ::testing::internal::CaptureStdout();
  model->fit(x, y, {.batch_size = 32, .epochs = 1, .verbose = 2});
  out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("85/85 [="), std::string::npos) << out;
}

}  // namespace
}  // namespace kiln::keras
