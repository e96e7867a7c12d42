// activity_regularizer: the penalty of a layer's output, divided by the batch size (tf.keras
// 2's _handle_activity_regularization), added to the loss in train and test steps; its config
// and .h5 round trips.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kiln/keras/saving/saving.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

// Dense(1) without bias, kernel w = 1, activity L2(0.5); x = (1, 2), y = (1, 1).
std::unique_ptr<Sequential> regularized_model() {
  auto model = std::make_unique<Sequential>(std::vector<LayerHandle>{
      InputLayer({.shape = {1}}),
      Dense(1, {.use_bias = false, .kernel_initializer = "ones", .activity_regularizer = Regularizer{.l2 = 0.5}})});
  model->compile({.optimizer = SGD({.learning_rate = 0.1}), .loss = "mse"});
  return model;
}

const HostTensor kX = HostTensor::from_vector<float>({2, 1}, {1, 2});
const HostTensor kY = HostTensor::from_vector<float>({2, 1}, {1, 1});

TEST(ActivityRegularizationTest, PenaltyOverTheBatchIsAddedToTheLossAndItsGradient) {
  // out = (1, 2): mse = (0 + 1) / 2 = 0.5; penalty = 0.5 (1 + 4) / 2 = 1.25; loss 1.75.
  // d/dw: mse 2 (0 * 1 + 1 * 2) / 2 = 2, penalty 0.5 * 2 (1 + 4) / 2 = 2.5: w = 1 - 0.45.
  std::unique_ptr<Sequential> model = regularized_model();
  const History h = model->fit(kX, kY, {.batch_size = 2, .shuffle = false, .verbose = 0});
  EXPECT_NEAR(h.history.at("loss")[0], 1.75, 1e-6);
  EXPECT_NEAR(model->get_weights()[0].to_vector<double>()[0], 0.55, 1e-6);
  // Evaluation adds it too: out = (0.55, 1.1), mse (0.45^2 + 0.1^2) / 2, penalty 0.25 (0.55^2 + 1.1^2).
  EXPECT_NEAR(model->evaluate(kX, kY, 2).at("loss"), 0.10625 + 0.378125, 1e-6);
  // Dividing by the batch makes the loss batch-size agnostic: one-row batches give the same
  // epoch loss (a summed penalty would give 0.10625 + 0.75625 with two-row batches).
  EXPECT_NEAR(model->evaluate(kX, kY, 1).at("loss"), 0.10625 + 0.378125, 1e-6);
}

TEST(ActivityRegularizationTest, ConfigAndH5RoundTrip) {
  std::unique_ptr<Sequential> model = regularized_model();
  const nlohmann::json config = nlohmann::json::parse(model->layers().back()->get_config());
  EXPECT_EQ(config.at("activity_regularizer").at("class_name"), "L2");
  EXPECT_EQ(config.at("activity_regularizer").at("config").at("l2"), 0.5);
  EXPECT_EQ(Dense::from_config(config.dump()).activity_regularizer()->l2, 0.5);

  kiln::testing::TempDir dir;
  model->save(dir.file("m.h5"));
  std::unique_ptr<Model> loaded = load_model(dir.file("m.h5"));
  EXPECT_EQ(loaded->layers().back()->activity_regularizer()->l2, 0.5);
  EXPECT_NEAR(loaded->evaluate(kX, kY, 2).at("loss"), 1.75, 1e-6);
}

TEST(ActivityRegularizationTest, EachCallOfASharedLayerIsPenalized) {
  // One Dense (w = 1, activity L1(1)) on two inputs: penalties |x1| / 1 and |x2| / 1 add up.
  KerasTensor a = Input({1}), b = Input({1});
  Dense shared(1, {.use_bias = false, .kernel_initializer = "ones", .activity_regularizer = Regularizer{.l1 = 1.0}});
  Functional model({a, b}, Add()({shared(a), shared(b)}));
  model.compile({.optimizer = SGD({.learning_rate = 0.0}), .loss = "mse"});
  const HostTensor xa = HostTensor::from_vector<float>({1, 1}, {2}), xb = HostTensor::from_vector<float>({1, 1}, {-3});
  // out = 2 - 3 = -1, y = 0: mse 1; penalties 2 + 3.
  const data::Dataset ds =
      data::Dataset::from_tensor_slices({xa, xb, HostTensor::from_vector<float>({1, 1}, {0})}).batch(1);
  EXPECT_NEAR(model.evaluate(ds).at("loss"), 6.0, 1e-6);
}

}  // namespace
}  // namespace kiln::keras
