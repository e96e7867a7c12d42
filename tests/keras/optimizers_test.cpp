// Optimizers and schedules against updates computed by hand (applied eagerly on scalars).
#include <gtest/gtest.h>

#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using testing::scalar;

Variable weight(float value) { return Variable("w", HostTensor::scalar<float>(value)); }

// Applies `steps` steps of gradient `g` to a scalar weight starting at `w0`; returns w.
double run(Optimizer& opt, float w0, float g, int steps) {
  Variable w = weight(w0);
  for (int i = 0; i < steps; ++i) opt.apply_gradients({Tensor::scalar(g)}, {w});
  return scalar(w);
}

TEST(AdamTest, OneStepMatchesTheKerasFormula) {
  // lr_t = 0.1 sqrt(1 - 0.999) / (1 - 0.9) = 0.0316228; m = 0.05; v = 0.00025;
  // w = 1 - lr_t m / (sqrt(v) + 1e-7) = 1 - 0.1 * 0.0158114 / 0.0158115 = 0.90000063.
  Adam adam({.learning_rate = 0.1});
  EXPECT_NEAR(run(adam, 1.0f, 0.5f, 1), 0.90000063, 1e-6);
  EXPECT_EQ(adam.iterations().storage().to_vector<int64_t>()[0], 1);
}

TEST(AdamTest, DefaultsAreKeras) {
  Adam adam;
  EXPECT_NEAR(adam.learning_rate(), 1e-3, 1e-9);
}

TEST(AdamWTest, DecaysTheWeightBeforeTheAdamStep) {
  // w = 1 - 0.1 * 0.1 * 1 = 0.99, then the Adam step of AdamTest: 0.99 - 0.09999937.
  AdamW adamw({.learning_rate = 0.1, .weight_decay = 0.1});
  EXPECT_NEAR(run(adamw, 1.0f, 0.5f, 1), 0.89000063, 1e-6);
}

TEST(SGDTest, PlainStepIsLearningRateTimesGradient) {
  SGD sgd({.learning_rate = 0.1});
  EXPECT_NEAR(run(sgd, 1.0f, 1.0f, 1), 0.9, 1e-7);
}

TEST(SGDTest, MomentumTwoSteps) {
  // v1 = -0.1, w1 = 0.9; v2 = 0.9 * -0.1 - 0.1 = -0.19, w2 = 0.71.
  SGD sgd({.learning_rate = 0.1, .momentum = 0.9});
  EXPECT_NEAR(run(sgd, 1.0f, 1.0f, 2), 0.71, 1e-6);
}

TEST(SGDTest, NesterovTwoSteps) {
  // w1 = 1 + 0.9 * -0.1 - 0.1 = 0.81; w2 = 0.81 + 0.9 * -0.19 - 0.1 = 0.539.
  SGD sgd({.learning_rate = 0.1, .momentum = 0.9, .nesterov = true});
  EXPECT_NEAR(run(sgd, 1.0f, 1.0f, 2), 0.539, 1e-6);
}

TEST(RMSpropTest, TwoSteps) {
  // ms1 = 0.1 * 4 = 0.4, w1 = 1 - 0.01 * 2 / sqrt(0.4) = 0.96837722;
  // ms2 = 0.9 * 0.4 + 0.4 = 0.76, w2 = w1 - 0.02 / sqrt(0.76) = 0.94543563.
  RMSprop rms({.learning_rate = 0.01});
  EXPECT_NEAR(run(rms, 1.0f, 2.0f, 2), 0.94543563, 1e-6);
}

TEST(SchedulesTest, ExponentialDecayAtSeveralSteps) {
  ExponentialDecay s(0.1, 10, 0.5);
  EXPECT_NEAR(s.at(0), 0.1, 1e-7);
  EXPECT_NEAR(s.at(5), 0.070710678, 1e-7);  // 0.1 * 0.5^0.5
  EXPECT_NEAR(s.at(20), 0.025, 1e-7);
  EXPECT_NEAR(ExponentialDecay(0.1, 10, 0.5, /*staircase=*/true).at(15), 0.05, 1e-7);
}

TEST(SchedulesTest, PiecewiseConstantDecayIncludesEachBoundaryInTheEarlierPiece) {
  PiecewiseConstantDecay s({10, 20}, {1.0, 0.5, 0.1});
  EXPECT_NEAR(s.at(0), 1.0, 1e-7);
  EXPECT_NEAR(s.at(10), 1.0, 1e-7);
  EXPECT_NEAR(s.at(11), 0.5, 1e-7);
  EXPECT_NEAR(s.at(20), 0.5, 1e-7);
  EXPECT_NEAR(s.at(21), 0.1, 1e-7);
  EXPECT_THROW(PiecewiseConstantDecay({1}, {1.0}), ValueError);
}

TEST(SchedulesTest, CosineDecayAtSeveralSteps) {
  CosineDecay s(1.0, 100);
  EXPECT_NEAR(s.at(0), 1.0, 1e-6);
  EXPECT_NEAR(s.at(25), 0.85355339, 1e-6);  // 0.5 (1 + cos(pi / 4))
  EXPECT_NEAR(s.at(50), 0.5, 1e-6);
  EXPECT_NEAR(s.at(100), 0.0, 1e-6);
  EXPECT_NEAR(s.at(200), 0.0, 1e-6);
  EXPECT_NEAR(CosineDecay(1.0, 100, /*alpha=*/0.1).at(100), 0.1, 1e-6);
}

TEST(SchedulesTest, OptimizerEvaluatesTheScheduleAtIterationsBeforeTheIncrement) {
  // Step 0 uses lr 1.0 (step <= 0), step 1 uses 0.5: w = 0 - 1 - 0.5.
  SGD sgd({.learning_rate = PiecewiseConstantDecay({0}, {1.0, 0.5})});
  EXPECT_NEAR(run(sgd, 0.0f, 1.0f, 2), -1.5, 1e-6);
  EXPECT_THROW(sgd.set_learning_rate(0.1), ValueError);
}

TEST(SchedulesTest, ConfigsRoundTripAsKerasSerializesThem) {
  const LearningRate decay = ExponentialDecay(0.1, 10, 0.5, /*staircase=*/true);
  const std::string json = learning_rate_to_config(decay);
  EXPECT_NE(json.find("\"class_name\":\"ExponentialDecay\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"module\":\"keras.optimizers.schedules\""), std::string::npos) << json;
  const LearningRate back = learning_rate_from_config(json);
  ASSERT_TRUE(back.schedule);
  for (int64_t step : {0, 9, 10, 25}) EXPECT_DOUBLE_EQ(back.schedule->at(step), decay.schedule->at(step)) << step;
  EXPECT_EQ(learning_rate_from_config("0.25").constant, 0.25);
  EXPECT_FALSE(learning_rate_from_config("0.25").schedule);
  KILN_EXPECT_ERROR(learning_rate_from_config(R"({"class_name": "InverseTimeDecay", "config": {}})"), ConfigError,
                    "unknown schedule class 'InverseTimeDecay'");
  KILN_EXPECT_ERROR(learning_rate_from_config(R"({"class_name": "CosineDecay", "config": {"alpha": 0}})"),
                    ConfigError, "CosineDecay config");
}

TEST(OptimizerTest, SlotsAreCreatedAtTheFirstApply) {
  Adam adam;
  EXPECT_EQ(adam.variables().size(), 2u);  // iterations, learning_rate
  run(adam, 1.0f, 1.0f, 1);
  EXPECT_EQ(adam.variables().size(), 4u);  // + m, v
  EXPECT_EQ(adam.variables()[2].name(), "Adam/w/m");
}

}  // namespace
}  // namespace kiln::keras
