// ModelLayer: a model used as a layer of another, as Keras nests them. Its weights, their
// trainable/non-trainable split at every depth, its output and its paths.
#include "kiln/keras/models/model_layer.h"

#include <gtest/gtest.h>

#include <sstream>

#include "kiln/keras/namespaces.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

std::vector<std::string> names(const std::vector<Variable>& vars) {
  std::vector<std::string> out;
  for (const Variable& v : vars) out.push_back(v.name());
  return out;
}

// Sequential[Dense, BatchNormalization] with a declared input of 3 features.
std::shared_ptr<Sequential> block(const std::string& name) {
  return std::make_shared<Sequential>(
      std::vector<LayerHandle>{Dense(4, {.input_shape = {3}, .name = name + "_dense"}),
                               BatchNormalization({.name = name + "_bn"})},
      SequentialOptions{.name = name});
}

TEST(ModelLayerTest, ListsTrainableWeightsBeforeNonTrainableAsKerasDoes) {
  Sequential top({ModelLayer(block("base")), Dense(2, {.name = "head"})});
  ASSERT_TRUE(top.built());
  EXPECT_EQ(names(top.layers()[0]->trainable_weights()),
            (std::vector<std::string>{"base_dense/kernel", "base_dense/bias", "base_bn/gamma", "base_bn/beta"}));
  EXPECT_EQ(names(top.non_trainable_weights()),
            (std::vector<std::string>{"base_bn/moving_mean", "base_bn/moving_variance"}));
  const auto& nested = dynamic_cast<const ModelLayer&>(*top.layers()[0]);
  EXPECT_EQ(nested.class_name(), "Sequential");
  EXPECT_EQ(nested.weight_paths()[0].first, "base_dense/kernel");
  EXPECT_EQ(top.count_params(), 3 * 4 + 4 + 4 * 4 + 4 * 2 + 2);
}

// A frozen model two levels down stays frozen inside a trainable one (Keras's rule: a layer's
// trainable weights are empty when it, or a model holding it, is frozen).
TEST(ModelLayerTest, FrozenInnerModelStaysFrozenInsideATrainableOne) {
  auto inner = std::make_shared<ModelLayer>(block("inner"));
  inner->set_trainable(false);
  auto middle = std::make_shared<Sequential>(std::vector<LayerHandle>{LayerHandle(std::shared_ptr<Layer>(inner))},
                                             SequentialOptions{.name = "middle"});
  Sequential top({ModelLayer(middle), Dense(1, {.name = "head"})});
  EXPECT_EQ(names(top.trainable_weights()), (std::vector<std::string>{"head/kernel", "head/bias"}));
  EXPECT_EQ(top.non_trainable_weights().size(), 6u);
  EXPECT_EQ(dynamic_cast<const ModelLayer&>(*top.layers()[0]).weight_paths()[0].first, "inner/inner_dense/kernel");
}

TEST(ModelLayerTest, CallsTheModelAndReportsItsOutputShape) {
  auto base = block("base");
  Sequential top({ModelLayer(base)});
  const HostTensor x = HostTensor::from_vector<float>({2, 3}, {1, 2, 3, -1, 0, 0.5f});
  const std::vector<float> nested = top.predict(x).to_vector<float>(), direct = base->predict(x).to_vector<float>();
  ASSERT_EQ(nested.size(), direct.size());
  for (size_t i = 0; i < nested.size(); ++i) EXPECT_NEAR(nested[i], direct[i], 1e-6) << i;
  EXPECT_EQ(top.layers()[0]->compute_output_shape({3}), Dims{4});
}

// A nested layer's weight penalty is part of the outer model's loss, as Keras's model.losses.
TEST(ModelLayerTest, NestedLayersRegularizersCountInTheOuterLoss) {
  auto base = std::make_shared<Sequential>(
      std::vector<LayerHandle>{Dense(2, {.kernel_regularizer = Regularizer{.l2 = 0.5}, .input_shape = {3}})});
  Sequential top({ModelLayer(base)});
  base->compile({.optimizer = SGD(), .loss = "mse"});
  top.compile({.optimizer = SGD(), .loss = "mse"});
  const HostTensor x = HostTensor::from_vector<float>({2, 3}, {1, 2, 3, -1, 0, 0.5f});
  const HostTensor y = HostTensor::from_vector<float>({2, 2}, {0, 1, 1, 0});
  const double direct = base->evaluate(x, y, 32, {.verbose = 0}).at("loss");
  double penalty = 0;
  for (float k : base->layers()[0]->weights()[0].host_value().to_vector<float>()) penalty += 0.5 * k * k;
  EXPECT_GT(penalty, 0.01);
  EXPECT_NEAR(top.evaluate(x, y, 32, {.verbose = 0}).at("loss"), direct, 1e-5);
}

std::vector<float> host(const Variable& v) { return v.host_value().to_vector<float>(); }

// Keras's transfer-learning rule: a frozen base's BatchNormalization runs in inference mode
// inside fit (its moving statistics stay), its weights stay, the head trains; unfrozen and
// recompiled, the same fit moves the statistics.
TEST(ModelLayerTest, AFrozenModelsBatchNormalizationRunsInInferenceModeDuringFit) {
  auto base = block("base");
  auto frozen = std::make_shared<ModelLayer>(base);
  frozen->set_trainable(false);
  Sequential top({LayerHandle(std::shared_ptr<Layer>(frozen)), Dense(1, {.name = "head"})});
  top.compile({.optimizer = SGD({.learning_rate = 0.1}), .loss = "mse"});
  std::vector<float> xs, ys;
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 3; ++j) xs.push_back(static_cast<float>((i * 3 + j) % 5) - 1.5f);
    ys.push_back(static_cast<float>(i % 2));
  }
  const HostTensor x = HostTensor::from_vector<float>({8, 3}, xs), y = HostTensor::from_vector<float>({8, 1}, ys);
  const auto& bn = dynamic_cast<const BatchNormalization&>(base->get_layer("base_bn"));
  const Layer& dense = base->get_layer("base_dense");
  const std::vector<float> mean0 = host(bn.moving_mean()), var0 = host(bn.moving_variance());
  const std::vector<float> kernel0 = host(dense.weights()[0]), gamma0 = host(bn.gamma());
  const std::vector<float> head0 = host(top.layers()[1]->weights()[0]);
  top.fit(x, y, {.batch_size = 4, .epochs = 2, .verbose = 0});
  EXPECT_EQ(host(bn.moving_mean()), mean0);
  EXPECT_EQ(host(bn.moving_variance()), var0);
  EXPECT_EQ(host(dense.weights()[0]), kernel0);
  EXPECT_EQ(host(bn.gamma()), gamma0);
  EXPECT_NE(host(top.layers()[1]->weights()[0]), head0);

  frozen->set_trainable(true);
  top.compile({.optimizer = SGD({.learning_rate = 0.01}), .loss = "mse"});  // Keras: recompile after unfreezing
  top.fit(x, y, {.batch_size = 4, .epochs = 1, .verbose = 0});
  EXPECT_NE(host(bn.moving_mean()), mean0);
  EXPECT_NE(host(dense.weights()[0]), kernel0);
}

// Keras's fine-tuning recipe: base.trainable = False freezes every inner layer; True unfreezes
// them all, and freezing the first layers again leaves only the top ones training.
TEST(ModelLayerTest, FreezingAModelFreezesEveryInnerLayerAndUnfreezingTheTopTrainsOnlyIt) {
  auto base = std::make_shared<Sequential>(
      std::vector<LayerHandle>{Dense(4, {.input_shape = {3}, .name = "d1"}), Dense(4, {.name = "d2"}),
                               BatchNormalization({.name = "bn"}), Dense(2, {.name = "d3"})},
      SequentialOptions{.name = "base"});
  Sequential top({ModelLayer(base), Dense(1, {.name = "head"})});
  base->set_trainable(false);
  for (const LayerHandle& l : base->layers()) EXPECT_FALSE(l->trainable()) << l->name();
  EXPECT_TRUE(base->trainable_weights().empty());
  EXPECT_EQ(names(top.trainable_weights()), (std::vector<std::string>{"head/kernel", "head/bias"}));
  // Frozen through the model, not its layer: the saved config still says so.
  EXPECT_NE(top.layers()[0]->get_config().find("\"trainable\":false"), std::string::npos);

  base->set_trainable(true);
  for (size_t i = 0; i < 2; ++i) base->layers()[i]->set_trainable(false);  // freeze all but the top two
  EXPECT_EQ(names(top.trainable_weights()),
            (std::vector<std::string>{"bn/gamma", "bn/beta", "d3/kernel", "d3/bias", "head/kernel", "head/bias"}));
  const int64_t frozen = 3 * 4 + 4 + 4 * 4 + 4 + 2 * 4;  // d1, d2 and bn's moving statistics
  std::ostringstream summary;
  top.summary(summary);
  EXPECT_NE(summary.str().find("Non-trainable params: " + std::to_string(frozen) + "\n"), std::string::npos)
      << summary.str();

  // Through the ModelLayer: the same flags, set on the model it wraps.
  top.layers()[0]->set_trainable(false);
  EXPECT_FALSE(base->trainable());
  EXPECT_FALSE(base->layers()[3]->trainable());
}

// base(x, {.training = false}): the base trains, but its BatchNormalization normalizes with
// (and keeps) its moving statistics, as in Keras's transfer-learning guide.
TEST(ModelLayerTest, ACallWithTrainingFalseKeepsBatchNormalizationInInferenceModeInsideFit) {
  auto base = block("base");
  KerasTensor in = Input({3});
  KerasTensor features = (*base)(in, {.training = false});
  Functional top({in}, Dense(1, {.name = "head"})(features));
  top.compile({.optimizer = SGD({.learning_rate = 0.1}), .loss = "mse"});
  const HostTensor x = HostTensor::from_vector<float>({4, 3}, {1, 2, 3, -1, 0, 0.5f, 2, 2, -2, 0, 1, 0});
  const HostTensor y = HostTensor::from_vector<float>({4, 1}, {0, 1, 1, 0});
  const auto& bn = dynamic_cast<const BatchNormalization&>(base->get_layer("base_bn"));
  const std::vector<float> mean0 = host(bn.moving_mean()), kernel0 = host(base->get_layer("base_dense").weights()[0]);
  top.fit(x, y, {.batch_size = 4, .epochs = 2, .verbose = 0});
  EXPECT_EQ(host(bn.moving_mean()), mean0);
  EXPECT_NE(host(base->get_layer("base_dense").weights()[0]), kernel0);
  EXPECT_NE(top.to_json().find("\"training\":false"), std::string::npos) << top.to_json();  // the node kwargs
}

TEST(ModelLayerTest, AModelCalledOnSymbolicInputsMustBeShared) {
  Sequential base({Dense(2, {.input_shape = {3}})}, {.name = "local"});
  KILN_EXPECT_ERROR(base(Input({3})), ValueError, "model 'local' is called on a KerasTensor but is not held by a std::shared_ptr");
}

TEST(ModelLayerTest, RefusesAModelWithSeveralOutputs) {
  KerasTensor in = Input({3});
  auto two = std::make_shared<Functional>(std::vector<KerasTensor>{in},
                                          std::vector<KerasTensor>{Dense(1)(in), Dense(2)(in)});
  KILN_EXPECT_ERROR(ModelLayer{two}, ValueError, "must take one input and give one output");
}

}  // namespace
}  // namespace kiln::keras
