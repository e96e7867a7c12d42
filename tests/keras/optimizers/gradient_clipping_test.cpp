// Gradient clipping (clipnorm, clipvalue, global_clipnorm) against updates computed by hand:
// eagerly on small vectors, through Model::fit's compiled step, and in Keras 2 and 3 configs.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "kiln/trace/ops/elementwise.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

Variable vector_variable(const std::string& name, const std::vector<float>& values) {
  return Variable(name, HostTensor::from_vector<float>({static_cast<int64_t>(values.size())}, values));
}

Tensor vector_tensor(const std::vector<float>& values) {
  return constant(HostTensor::from_vector<float>({static_cast<int64_t>(values.size())}, values));
}

void expect_values(const Variable& v, const std::vector<double>& expected, double tolerance = 1e-6) {
  const std::vector<double> got = v.storage().to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tolerance) << v.name() << "[" << i << "]";
}

TEST(GradientClippingTest, ClipnormRescalesEachGradientToItsOwnNorm) {
  // g1 = (3, 4): norm 5 > 1, becomes (0.6, 0.8); g2 = (0.3): norm 0.3 <= 1, kept.
  SGD sgd({.learning_rate = 1.0, .clipnorm = 1.0});
  Variable w1 = vector_variable("w1", {0, 0}), w2 = vector_variable("w2", {0});
  sgd.apply_gradients({vector_tensor({3, 4}), vector_tensor({0.3f})}, {w1, w2});
  expect_values(w1, {-0.6, -0.8});
  expect_values(w2, {-0.3});
}

TEST(GradientClippingTest, GlobalClipnormScalesEveryGradientByTheJointNorm) {
  // sqrt(3^2 + 4^2 + 0^2) = 5 > 2.5: every gradient times 0.5 (clipnorm would leave g2 = 4 at 4).
  SGD sgd({.learning_rate = 1.0, .global_clipnorm = 2.5});
  Variable w1 = vector_variable("w1", {0, 0}), w2 = vector_variable("w2", {0});
  sgd.apply_gradients({vector_tensor({3, 0}), vector_tensor({4})}, {w1, w2});
  expect_values(w1, {-1.5, 0});
  expect_values(w2, {-2});
  // Under the limit nothing changes.
  SGD loose({.learning_rate = 1.0, .global_clipnorm = 10.0});
  loose.apply_gradients({vector_tensor({3, 0}), vector_tensor({4})}, {w1, w2});
  expect_values(w1, {-4.5, 0});
  expect_values(w2, {-6});
}

TEST(GradientClippingTest, ClipvalueClipsEachElement) {
  SGD sgd({.learning_rate = 1.0, .clipvalue = 0.5});
  Variable w = vector_variable("w", {0, 0, 0});
  sgd.apply_gradients({vector_tensor({2, -0.25f, -3})}, {w});
  expect_values(w, {-0.5, 0.25, 0.5});
}

TEST(GradientClippingTest, ClipsBeforeTheOptimizersOwnUpdate) {
  // Adam's first step is lr * sign(g) whatever |g|, so the clip shows in the moments the
  // second step reads: the first gradient 5 enters them as 0.1.
  Adam adam({.learning_rate = 0.1, .clipvalue = 0.1});
  Variable w = vector_variable("w", {0});
  adam.apply_gradients({vector_tensor({5})}, {w});     // clipped to 0.1: m = 0.01, v = 1e-5
  adam.apply_gradients({vector_tensor({0.05f})}, {w});  // m = 0.0095, v = 1.2499e-5
  auto step = [](int t, double m, double v) {
    return 0.1 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t)) * m / (std::sqrt(v) + 1e-7);
  };
  const double first = step(1, 0.01, 1e-5);
  const double second = step(2, 0.9 * 0.01 + 0.1 * 0.05, 0.999 * 1e-5 + 0.001 * 0.0025);
  // f32 holds 1 - 0.999 to about 1e-5 relative; without the clip the second step is 0.068, not 0.063.
  expect_values(w, {-first - second}, 1e-5);
}

TEST(GradientClippingTest, FitClipsInTheCompiledStep) {
  // Dense(1) on x = (1, -2), y = 0.5 from kernel (0.25, 0.75), bias 0: prediction -1.25,
  // dL/dpred = 2 (-1.25 - 0.5) = -3.5; kernel gradient (-3.5, 7), bias gradient -3.5, global
  // norm 3.5 sqrt(6). With global_clipnorm 1 every gradient is scaled by 1 / (3.5 sqrt(6)).
  Sequential model({InputLayer({.shape = {2}}), Dense(1)});
  model.compile({.optimizer = SGD({.learning_rate = 0.1, .global_clipnorm = 1.0}), .loss = "mse"});
  model.set_weights({HostTensor::from_vector<float>({2, 1}, {0.25f, 0.75f}), HostTensor::from_vector<float>({1}, {0})});
  model.fit(HostTensor::from_vector<float>({1, 2}, {1, -2}), HostTensor::from_vector<float>({1, 1}, {0.5f}),
            {.batch_size = 1, .shuffle = false, .verbose = 0});
  const double scale = 1.0 / (3.5 * std::sqrt(6.0));
  const std::vector<double> kernel = model.get_weights()[0].to_vector<double>();
  const std::vector<double> bias = model.get_weights()[1].to_vector<double>();
  EXPECT_NEAR(kernel[0], 0.25 + 0.1 * 3.5 * scale, 1e-6);
  EXPECT_NEAR(kernel[1], 0.75 - 0.1 * 7.0 * scale, 1e-6);
  EXPECT_NEAR(bias[0], 0.1 * 3.5 * scale, 1e-6);
}

TEST(GradientClippingTest, ConfigsRoundTripInKeras2AndKeras3Forms) {
  // tf.keras 2 writes a clip key only when it is set; Keras 3 writes all three, null when off.
  OptimizerHandle sgd = SGD({.learning_rate = 0.1, .clipnorm = 1.5});
  const nlohmann::json config = nlohmann::json::parse(sgd->get_config());
  EXPECT_EQ(config.at("clipnorm"), 1.5);
  EXPECT_FALSE(config.contains("clipvalue"));
  EXPECT_EQ(optimizer_from_config("SGD", config.dump())->clipping().clipnorm, 1.5);
  OptimizerHandle adam = optimizer_from_config(
      "Adam", R"({"learning_rate": 0.001, "clipnorm": null, "global_clipnorm": 2.0, "clipvalue": null})");
  EXPECT_EQ(adam->clipping().global_clipnorm, 2.0);
  EXPECT_FALSE(adam->clipping().clipnorm.has_value());
  EXPECT_FALSE(adam->clipping().clipvalue.has_value());
  EXPECT_EQ(optimizer_from_config("Custom>Lion", R"({"clipvalue": 0.5})")->clipping().clipvalue, 0.5);
  OptimizerHandle adamw = AdamW({.clipvalue = 0.25});
  EXPECT_EQ(optimizer_from_config("AdamW", adamw->get_config())->clipping().clipvalue, 0.25);
}

TEST(GradientClippingTest, ConflictingOrNonPositiveSettingsAreValueErrors) {
  KILN_EXPECT_ERROR(SGD({.clipnorm = 1.0, .global_clipnorm = 1.0}), ValueError,
                    "[SGD] only one of clipnorm and global_clipnorm can be set");
  KILN_EXPECT_ERROR(Adam({.clipnorm = 1.0, .clipvalue = 0.5}), ValueError,
                    "[Adam] clipvalue=0.5 together with clipnorm");
  KILN_EXPECT_ERROR(optimizer_from_config("Nadam", R"({"global_clipnorm": 1.0, "clipvalue": 2.0})"), ValueError,
                    "clipvalue=2 together with global_clipnorm");
  KILN_EXPECT_ERROR(RMSprop({.clipvalue = 0.0}), ValueError, "[RMSprop] expected clipvalue > 0, received clipvalue=0");
  KILN_EXPECT_ERROR(optimizer_from_config("SGD", R"({"clipnorm": "big"})"), ConfigError,
                    "expected clipnorm to be a number");
}

}  // namespace
}  // namespace kiln::keras
