// The seed's program as a tf.keras user writes it: tf.keras's namespaces name Kiln's types,
// a model declared before strategy.scope() and assigned inside it keeps that strategy (models
// move), layers take Keras's first positional arguments, and a moved trained model predicts
// what it did before the move, and the layer object a user holds is the one in the model.
#include <gtest/gtest.h>

#include <random>
#include <type_traits>

#include "kiln/distribute/logical_devices.h"
#include "kiln/distribute/strategy.h"
#include "kiln/keras/keras.h"
#include "kiln/trace/function.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln {
namespace {

static_assert(std::is_same_v<keras::layers::Dense, keras::Dense>);
static_assert(std::is_same_v<keras::layers::MaxPooling2D, keras::MaxPooling2D>);
static_assert(std::is_same_v<keras::optimizers::Adam, keras::Adam>);
static_assert(std::is_same_v<keras::optimizers::schedules::CosineDecay, keras::CosineDecay>);
static_assert(std::is_same_v<keras::losses::SparseCategoricalCrossentropy, keras::SparseCategoricalCrossentropy>);
static_assert(std::is_same_v<keras::metrics::SparseCategoricalAccuracy, keras::SparseCategoricalAccuracy>);
static_assert(std::is_same_v<keras::callbacks::ModelCheckpoint, keras::ModelCheckpoint>);
static_assert(std::is_same_v<keras::models::Sequential, keras::Sequential>);
static_assert(std::is_move_constructible_v<keras::Sequential> && std::is_move_assignable_v<keras::Sequential>);
static_assert(std::is_move_assignable_v<keras::Functional>);

std::pair<HostTensor, HostTensor> synthetic(int64_t n) { return keras::testing::synthetic_mnist(n, 5); }

// The seed's S6, in tf.keras's words.
keras::models::Sequential seed_model() {
  using namespace keras;
  return models::Sequential({layers::Flatten({.input_shape = {28, 28}}),
                             layers::Dense(128, {.activation = "relu"}), layers::Dense(10)});
}

void compile_seed(keras::Model& model) {
  using namespace keras;
  model.compile({.optimizer = optimizers::Adam(),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
}

class KerasUserApiTest : public ::testing::Test {
 protected:
  void SetUp() override { config::set_logical_cpu_devices(2); }
  void TearDown() override { config::set_logical_cpu_devices(1); }
};

TEST_F(KerasUserApiTest, AModelAssignedInsideAScopeKeepsItsStrategyAndTrainsAsOneMadeThere) {
  auto [x, y] = synthetic(256);
  data::Dataset ds = keras::testing::batches(x, y, 64);
  auto strategy = std::make_shared<distribute::MirroredStrategy>();

  keras::models::Sequential model;  // declared outside, as the seed's Python does implicitly
  std::unique_ptr<keras::Sequential> reference;
  {
    auto scope = strategy->scope();
    model = seed_model();
    compile_seed(model);
    reference = std::make_unique<keras::Sequential>(seed_model());
    compile_seed(*reference);
  }
  EXPECT_EQ(model.distribute_strategy(), strategy);
  keras::models::Sequential compiled_later;  // made in the scope, compiled after it
  {
    auto scope = strategy->scope();
    compiled_later = seed_model();
  }
  compile_seed(compiled_later);
  EXPECT_EQ(compiled_later.distribute_strategy(), strategy);
  model.predict(x.slice_rows(0, 2));
  reference->predict(x.slice_rows(0, 2));
  reference->set_weights(model.get_weights());

  // fit outside the scope: the model's own strategy splits each batch over its 2 replicas.
  keras::History moved = model.fit(ds, {.epochs = 2, .verbose = 0});
  keras::History made_there;
  {
    auto scope = strategy->scope();
    made_there = reference->fit(ds, {.epochs = 2, .verbose = 0});
  }
  EXPECT_EQ(moved.history.at("loss"), made_there.history.at("loss"));
  const auto a = model.get_weights(), b = reference->get_weights();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].to_vector<float>(), b[i].to_vector<float>()) << i;
}

// The seed's custom loop (S15): a metric updated inside strategy.run reads the global value,
// not replica 0's.
TEST_F(KerasUserApiTest, ACustomLoopMetricUnderMirroredStrategyReadsTheGlobalValue) {
  auto strategy = std::make_shared<distribute::MirroredStrategy>();
  std::unique_ptr<keras::SparseCategoricalAccuracy> accuracy;
  {
    auto scope = strategy->scope();
    accuracy = std::make_unique<keras::SparseCategoricalAccuracy>();
  }
  Function step = kiln::function("metric_step", [&](const std::vector<Tensor>& in) {
    accuracy->update_state(in[1], in[0]);
    return accuracy->result();
  });
  // 8 rows of 2-class logits predicting class 0; replica 0's 4 labels are all 0, replica 1's
  // hold one 0: 5 of 8 right.
  HostTensor logits = HostTensor::from_vector<float>({8, 2}, {1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0});
  HostTensor labels = HostTensor::from_vector<int32_t>({8}, {0, 0, 0, 0, 0, 1, 1, 1});
  strategy->run([&](const data::Element& shard) { step({shard[0], shard[1]}); },
                strategy->split_batch(data::Element{logits, labels}));
  EXPECT_DOUBLE_EQ(accuracy->result().to_vector<double>()[0], 5.0 / 8.0);
  accuracy->reset_state();
  EXPECT_DOUBLE_EQ(accuracy->result().to_vector<double>()[0], 0.0);
}

// The confusion, threshold and regression metrics in a custom loop on 2 replicas read what
// one update with the whole batch gives (their counts are summed over the replicas on read).
TEST_F(KerasUserApiTest, CustomLoopMetricsUnderMirroredStrategyEqualOneReplica) {
  auto make = [] {
    std::vector<keras::MetricHandle> m{keras::metrics::Precision({0.3, 0.6}, "precision"), keras::metrics::Recall(),
                                keras::metrics::AUC({.num_thresholds = 20}),
                                keras::metrics::AUC({.curve = "PR", .name = "pr_auc"}),
                                keras::BinaryAccuracy("binary_accuracy", 0.4), keras::metrics::RootMeanSquaredError()};
    return m;
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> p(16), y(16);
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] = unit(rng);
    y[i] = unit(rng) < 0.5f ? 0.0f : 1.0f;
  }
  const HostTensor pred = HostTensor::from_vector<float>({16, 1}, p), labels = HostTensor::from_vector<float>({16, 1}, y);
  auto update_all = [](std::vector<keras::MetricHandle>& ms) {
    return kiln::function("metrics_step", [&ms](const std::vector<Tensor>& in) {
      for (keras::MetricHandle& m : ms) m->update_state(in[1], in[0]);
      return ms[0]->result();
    });
  };
  std::vector<keras::MetricHandle> single = make();
  Function single_step = update_all(single);
  single_step({pred, labels});
  auto strategy = std::make_shared<distribute::MirroredStrategy>();
  std::vector<keras::MetricHandle> mirrored;
  {
    auto scope = strategy->scope();
    mirrored = make();
  }
  Function mirrored_step = update_all(mirrored);
  strategy->run([&](const data::Element& shard) { mirrored_step({shard[0], shard[1]}); },
                strategy->split_batch(data::Element{pred, labels}));
  for (size_t i = 0; i < single.size(); ++i) {
    const std::vector<double> a = single[i]->result().to_vector<double>(), b = mirrored[i]->result().to_vector<double>();
    ASSERT_EQ(a.size(), b.size()) << single[i]->name();
    for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(b[k], a[k], 1e-6) << single[i]->name() << " " << k;
  }
}

TEST_F(KerasUserApiTest, CompilingInAnotherStrategysScopeIsAnError) {
  auto first = std::make_shared<distribute::MirroredStrategy>();
  auto second = std::make_shared<distribute::MirroredStrategy>();
  keras::models::Sequential model;
  {
    auto scope = first->scope();
    model = seed_model();
  }
  auto scope = second->scope();
  KILN_EXPECT_ERROR(compile_seed(model), ValueError, "compiled in the scope of another");
}

TEST(KerasUserApiMoveTest, AMovedTrainedModelPredictsAndTrainsOnAsBefore) {
  auto [x, y] = synthetic(128);
  keras::Sequential model = seed_model();
  compile_seed(model);
  model.fit(x, y, {.batch_size = 32, .epochs = 1, .verbose = 0});
  const HostTensor before = model.predict(x.slice_rows(0, 16));
  keras::Sequential moved = std::move(model);
  EXPECT_EQ(moved.predict(x.slice_rows(0, 16)).to_vector<float>(), before.to_vector<float>());
  EXPECT_TRUE(moved.is_compiled());
  const double loss = moved.evaluate(x, y, 32, {.verbose = 0}).at("loss");
  moved.fit(x, y, {.batch_size = 32, .epochs = 2, .verbose = 0});
  EXPECT_LT(moved.evaluate(x, y, 32, {.verbose = 0}).at("loss"), loss);
}

// Keras warns, and runs the layers, when a Sequential gets another per-example shape than the
// one it was made for (the seed's Flatten((28, 28)) fed (28, 28, 1) images).
TEST(KerasUserApiMoveTest, AnInputOfAnotherShapeThanDeclaredIsAWarningNotSilence) {
  keras::Sequential model({keras::layers::Flatten({.input_shape = {28, 28}}), keras::layers::Dense(3)});
  ::testing::internal::CaptureStderr();
  HostTensor out = model.predict(HostTensor(Shape(DType::kF32, {2, 28, 28, 1})));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(out.dims(), (Dims{2, 3}));
  EXPECT_NE(err.find("was constructed with shape (None, 28, 28) for its input, but it was called on an input "
                     "with incompatible shape (None, 28, 28, 1)"),
            std::string::npos)
      << err;
}

TEST(KerasUserApiLayersTest, LayersTakeKerassFirstPositionalArguments) {
  using namespace keras::layers;
  EXPECT_EQ(MaxPooling2D({3, 3}).pool_size(), (Dims{3, 3}));
  EXPECT_EQ(MaxPooling2D(2).pool_size(), (Dims{2, 2}));
  EXPECT_EQ(AveragePooling2D({2, 1}, {.padding = "same"}).pool_size(), (Dims{2, 1}));
  EXPECT_EQ(MaxPooling2D({3, 3}).get_config(), MaxPooling2D({.pool_size = {3, 3}}).get_config());
  EXPECT_EQ(BatchNormalization(1).get_config(), BatchNormalization({.axis = 1}).get_config());
  EXPECT_EQ(LayerNormalization(1, {.epsilon = 1e-5}).get_config(),
            LayerNormalization({.axis = 1, .epsilon = 1e-5}).get_config());
  EXPECT_EQ(Dropout(0.2).get_config(), Dropout(0.2, {}).get_config());
  EXPECT_EQ(Conv2D(32, {3, 3}).get_config(), Conv2D(32, 3).get_config());
  EXPECT_EQ(Reshape({28, 28, 1}).get_config(), Reshape({28, 28, 1}, {}).get_config());
}

// Keras layers are objects, not values: `d = Dense(4); m = Sequential([d])` leaves d the model's
// layer, built with it, trained with it, and shared by every model it joins.
TEST(KerasUserApiLayersTest, TheLayerTheUserHoldsIsTheLayerInTheModel) {
  using namespace keras;
  Dense d(4);
  Sequential m({d});
  m.build({3});
  EXPECT_TRUE(d.built());
  EXPECT_EQ(d.count_params(), 3 * 4 + 4);
  EXPECT_EQ(d.name(), m.layers()[0]->name());
  ASSERT_TRUE(d.kernel().defined());
  EXPECT_EQ(d.kernel().state(), m.trainable_weights()[0].state());

  m.compile({.optimizer = "sgd", .loss = "mse"});
  const HostTensor x = HostTensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const HostTensor y(Shape(DType::kF32, {2, 4}));
  const std::vector<float> before = d.kernel().storage().to_vector<float>();
  m.fit(data::Dataset::from_tensor_slices({x, y}).batch(2), {.verbose = 0});
  EXPECT_NE(d.kernel().storage().to_vector<float>(), before) << "the model trained another layer";
  const std::vector<float> eager = d(Tensor(x)).to_vector<float>(), predicted = m.predict(x).to_vector<float>();
  ASSERT_EQ(eager.size(), predicted.size());
  for (size_t i = 0; i < eager.size(); ++i) EXPECT_NEAR(eager[i], predicted[i], 1e-5) << i;

  // Freezing the object the user holds freezes the model's layer; a second model shares it.
  d.set_trainable(false);
  EXPECT_TRUE(m.trainable_weights().empty());
  Sequential m2({d, Dense(1)});
  EXPECT_EQ(m2.layers()[0].get(), m.layers()[0].get());
  Dense copy = d;  // a copy of a model's layer stands for the same layer
  EXPECT_EQ(copy.kernel().state(), d.kernel().state());

  // A layer object called on KerasTensors is shared by its calls and the functional model.
  Dense shared(2);
  KerasTensor a = Input({3}), b = Input({3});
  Functional f({a, b}, Add()({shared(a), shared(b)}));
  EXPECT_EQ(f.layers().size(), 4u);  // two inputs, one Dense, Add
  EXPECT_TRUE(shared.built());
  EXPECT_EQ(shared.count_params(), 3 * 2 + 2);
}

}  // namespace
}  // namespace kiln
