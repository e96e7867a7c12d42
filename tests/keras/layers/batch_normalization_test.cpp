// BatchNormalization: batch-statistics numerics and moving-average updates against
// hand-computed values (eagerly and inside one compiled fit step), inference with the moving
// statistics, gradients against finite differences in both modes, weights in Keras order,
// summary counts, errors and the tf.keras config.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/keras/keras_testing.h"
#include "tests/keras/layer_gradients.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using kiln::testing::random_f64;
using testing::check_layer_gradients;

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

std::vector<float> values(const Variable& v) { return v.storage().to_vector<float>(); }

TEST(BatchNormalizationTest, TrainingNormalizesWithBatchMomentsAndMovesTheAverages) {
  // x (4, 2): feature 0 = {1, 2, 3, 4} (mean 2.5, biased var 1.25), feature 1 = {2, 4, 6, 8}
  // (mean 5, biased var 5).
  BatchNormalization bn;
  Tensor x = Tensor::from_vector<float>({4, 2}, {1, 2, 2, 4, 3, 6, 4, 8});
  std::vector<float> y = bn(x, /*training=*/true).to_vector<float>();
  const double s0 = std::sqrt(1.25 + 1e-3), s1 = std::sqrt(5 + 1e-3);
  expect_near(y, {-1.5 / s0, -3 / s1, -0.5 / s0, -1 / s1, 0.5 / s0, 1 / s1, 1.5 / s0, 3 / s1});
  // moving = moving * 0.99 + batch * 0.01, with the biased variance for rank-2 inputs.
  expect_near(values(bn.moving_mean()), {0.025, 0.05});
  expect_near(values(bn.moving_variance()), {0.99 + 0.0125, 0.99 + 0.05});
  bn(x, /*training=*/false);  // inference leaves the statistics alone
  expect_near(values(bn.moving_mean()), {0.025, 0.05});
  // An empty batch (a replica's share of a partial batch smaller than the replica count) has
  // no moments: the averages stay (they became NaN).
  bn(Tensor(HostTensor(Shape(DType::kF32, {0, 2}))), /*training=*/true);
  expect_near(values(bn.moving_mean()), {0.025, 0.05});
  expect_near(values(bn.moving_variance()), {0.99 + 0.0125, 0.99 + 0.05});
}

// Keras's layer.momentum = m after construction (what a builder fixed): the next update uses it
// and the config says it.
TEST(BatchNormalizationTest, MomentumSetAfterConstructionDrivesTheNextUpdate) {
  BatchNormalization bn;
  bn.set_momentum(0.5);
  EXPECT_EQ(bn.momentum(), 0.5);
  bn(Tensor::from_vector<float>({2, 1}, {2, 4}), /*training=*/true);
  expect_near(values(bn.moving_mean()), {0.5 * 0 + 0.5 * 3});
  EXPECT_NE(bn.get_config().find("\"momentum\":0.5"), std::string::npos) << bn.get_config();
  KILN_EXPECT_ERROR(bn.set_momentum(1.5), ValueError, "expected momentum in [0, 1], received momentum=1.5");
}

TEST(BatchNormalizationTest, FourDimensionalInputsFeedTheUnbiasedVarianceLikeTfKeras) {
  // x (2, 2, 1, 1) = {1, 2, 3, 4}: n = 4, biased var 1.25 (normalizes), unbiased 5/3 (moves).
  BatchNormalization bn({.momentum = 0.9});
  Tensor x = Tensor::from_vector<float>({2, 2, 1, 1}, {1, 2, 3, 4});
  const double s = std::sqrt(1.25 + 1e-3);
  expect_near(bn(x, true).to_vector<float>(), {-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s});
  expect_near(values(bn.moving_mean()), {0.25});
  expect_near(values(bn.moving_variance()), {0.9 + 0.1 * 5.0 / 3.0});
}

TEST(BatchNormalizationTest, InferenceUsesMovingStatisticsGammaAndBeta) {
  BatchNormalization bn({.epsilon = 0.01});
  bn.build(Dims{3});
  bn.gamma().assign(Tensor::from_vector<float>({3}, {2, 1, 0.5}));
  bn.beta().assign(Tensor::from_vector<float>({3}, {0.5, 0, -1}));
  bn.moving_mean().assign(Tensor::from_vector<float>({3}, {1, -1, 0}));
  bn.moving_variance().assign(Tensor::from_vector<float>({3}, {3, 0.99, 4}));
  std::vector<float> y = bn(Tensor::from_vector<float>({1, 3}, {4, 1, 2})).to_vector<float>();
  expect_near(y, {(4 - 1) / std::sqrt(3.01) * 2 + 0.5, 2 / 1.0, 2 / std::sqrt(4.01) * 0.5 - 1});
  // A frozen layer (trainable = false) runs in inference mode even when training, as in Keras 2.
  bn.set_trainable(false);
  expect_near(bn(Tensor::from_vector<float>({1, 3}, {4, 1, 2}), true).to_vector<float>(),
              {y[0], y[1], y[2]});
  expect_near(values(bn.moving_mean()), {1, -1, 0});
}

TEST(BatchNormalizationTest, OneCompiledFitStepUpdatesTheMovingStatisticsByHand) {
  Sequential model({BatchNormalization({.input_shape = {2, 2, 1}}), Flatten(), Dense(1)});
  model.compile({.optimizer = SGD({.learning_rate = 0.1}), .loss = MeanSquaredError()});
  // Four images: their 16 pixels are 0..15 (mean 7.5, unbiased var 340 / 15).
  HostTensor x(Shape(DType::kF32, {4, 2, 2, 1}));
  for (size_t i = 0; i < 16; ++i) x.data<float>()[i] = static_cast<float>(i);
  HostTensor y = HostTensor::from_vector<float>({4, 1}, {1, 0, 1, 0});
  const auto& bn = dynamic_cast<const BatchNormalization&>(*model.layers()[0]);
  const std::vector<float> gamma_before = values(bn.gamma());
  model.fit(testing::batches(x, y, 4), {.epochs = 1, .verbose = 0});
  expect_near(values(bn.moving_mean()), {0.01 * 7.5});
  expect_near(values(bn.moving_variance()), {0.99 + 0.01 * 340.0 / 15.0});
  EXPECT_NE(values(bn.gamma()), gamma_before);  // gamma is trained, by SGD not by assignment
  model.evaluate(testing::batches(x, y, 4), {.verbose = 0});  // training=false: no update
  expect_near(values(bn.moving_mean()), {0.01 * 7.5});
  // predict normalizes with the moving statistics: the BN layer alone shows it.
  Sequential alone({BatchNormalization({.input_shape = {1}})});
  const auto& bn1 = dynamic_cast<const BatchNormalization&>(*alone.layers()[0]);
  bn1.moving_mean().assign(Tensor::from_vector<float>({1}, {2}));
  bn1.moving_variance().assign(Tensor::from_vector<float>({1}, {4}));
  HostTensor p = alone.predict(HostTensor::from_vector<float>({2, 1}, {0, 6}));
  expect_near(p.to_vector<float>(), {-2 / std::sqrt(4.001), 4 / std::sqrt(4.001)});
}

TEST(BatchNormalizationTest, GradientsMatchFiniteDifferencesInBothModes) {
  Initializer gamma_init("random_uniform", 5);
  gamma_init.minval = 0.5;
  gamma_init.maxval = 1.5;
  const BatchNormalizationOptions o{.beta_initializer = Initializer("random_uniform", 6),
                                    .gamma_initializer = gamma_init};
  BatchNormalization dense_bn(o), image_bn(o), inference_bn(o);
  BatchNormalization channel1_bn({.axis = 1, .gamma_initializer = gamma_init});
  EXPECT_TRUE(check_layer_gradients(dense_bn, random_f64({5, 3}, 7).astype(DType::kF32), true));
  EXPECT_TRUE(check_layer_gradients(image_bn, random_f64({2, 3, 2, 2}, 8).astype(DType::kF32), true));
  EXPECT_TRUE(check_layer_gradients(channel1_bn, random_f64({3, 2, 2, 2}, 9).astype(DType::kF32), true));
  EXPECT_TRUE(check_layer_gradients(inference_bn, random_f64({2, 3, 2, 2}, 10).astype(DType::kF32), false));
}

TEST(BatchNormalizationTest, WeightsComeInKerasOrderAndSummaryCountsThem) {
  Sequential model({Conv2D(32, 3, {.input_shape = {8, 8, 1}}), BatchNormalization(), Flatten(), Dense(2)});
  const Layer& bn = model.get_layer("batch_normalization");
  std::vector<std::string> names;
  for (const Variable& w : bn.weights()) names.push_back(w.name());
  EXPECT_EQ(names, (std::vector<std::string>{"batch_normalization/gamma", "batch_normalization/beta",
                                             "batch_normalization/moving_mean",
                                             "batch_normalization/moving_variance"}));
  EXPECT_EQ(bn.trainable_weights().size(), 2u);
  EXPECT_EQ(bn.count_params(), 128);
  const std::string text = model.summary_text();
  EXPECT_NE(text.find("batch_normalization (BatchNo (None, 6, 6, 32)"), std::string::npos) << text;
  EXPECT_NE(text.find("Non-trainable params: 64"), std::string::npos) << text;
  BatchNormalization no_affine({.center = false, .scale = false});
  no_affine.build(Dims{4});
  EXPECT_EQ(no_affine.weights().size(), 2u);
  EXPECT_TRUE(no_affine.trainable_weights().empty());
}

TEST(BatchNormalizationTest, RejectsBadAxesAndInputs) {
  BatchNormalization batch_axis({.axis = 0, .name = "bn"});
  KILN_EXPECT_ERROR(batch_axis.build(Dims{3}), ValueError, "[bn] axis=0 is not a feature axis of a rank-2 input");
  KILN_EXPECT_ERROR(BatchNormalization({.momentum = 1.5}), ValueError, "momentum in [0, 1]");
  BatchNormalization bn({.name = "bn"});
  bn.build(Dims{3});
  KILN_EXPECT_ERROR(bn(Tensor(HostTensor(Shape(DType::kF32, {2, 4})))), ShapeError,
                    "[bn] expected input with 3 features on axis 1");
}

TEST(BatchNormalizationTest, ConfigIsTfKerasJsonAndRoundTrips) {
  BatchNormalization bn;
  bn.set_name("batch_normalization");
  const std::string unbuilt = bn.get_config();
  const std::string rest =
      R"("beta_constraint":null,"beta_initializer":{"class_name":"Zeros","config":{}},"beta_regularizer":null,)"
      R"("center":true,"dtype":"float32","epsilon":0.001,"gamma_constraint":null,)"
      R"("gamma_initializer":{"class_name":"Ones","config":{}},"gamma_regularizer":null,"momentum":0.99,)"
      R"("moving_mean_initializer":{"class_name":"Zeros","config":{}},)"
      R"("moving_variance_initializer":{"class_name":"Ones","config":{}},"name":"batch_normalization",)"
      R"("scale":true,"trainable":true})";
  EXPECT_EQ(unbuilt, R"({"axis":-1,)" + rest);
  bn.build(Dims{5, 5, 16});  // tf.keras 2.x stores the validated axis list once built
  const std::string built = bn.get_config();
  EXPECT_EQ(built, R"({"axis":[3],)" + rest);
  EXPECT_EQ(layer_from_config("BatchNormalization", unbuilt)->get_config(), unbuilt);
  EXPECT_EQ(layer_from_config("BatchNormalization", built)->get_config(), built);
  BatchNormalization custom({.axis = 1, .momentum = 0.9, .epsilon = 1e-5, .center = false, .name = "bn"});
  EXPECT_EQ(layer_from_config("BatchNormalization", custom.get_config())->get_config(), custom.get_config());
  KILN_EXPECT_ERROR(layer_from_config("BatchNormalization", R"({"axis":[1,2]})"), ConfigError,
                    "normalizes over one feature axis");
}

}  // namespace
}  // namespace kiln::keras
