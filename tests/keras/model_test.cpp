// Models: summary table, fit on an MNIST subset, predict vs evaluate, steps_per_execution,
// save/load of weights and the errors of an uncompiled model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "kiln/ir/printer.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using testing::batches;

std::unique_ptr<Sequential> seed_model() {
  return std::make_unique<Sequential>(std::vector<LayerHandle>{
      Flatten({.input_shape = {28, 28}}), Dense(128, {.activation = "relu"}), Dense(10)});
}

void compile_seed(Model& model, int steps_per_execution = 1) {
  model.compile({.optimizer = Adam(),
                 .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"},
                 .steps_per_execution = steps_per_execution});
}

TEST(SummaryTest, PrintsTheKerasTableForTheSeedModel) {
  const std::string expected =
      "Model: \"sequential\"\n"
      "_________________________________________________________________\n"
      "Layer (type)                 Output Shape              Param #   \n"
      "=================================================================\n"
      "flatten (Flatten)            (None, 784)               0         \n"
      "_________________________________________________________________\n"
      "dense (Dense)                (None, 128)               100480    \n"
      "_________________________________________________________________\n"
      "dense_1 (Dense)              (None, 10)                1290      \n"
      "=================================================================\n"
      "Total params: 101,770\n"
      "Trainable params: 101,770\n"
      "Non-trainable params: 0\n"
      "_________________________________________________________________\n";
  EXPECT_EQ(seed_model()->summary_text(), expected);
}

TEST(SummaryTest, FrozenLayersCountAsNonTrainable) {
  auto model = seed_model();
  model->get_layer("dense_1").set_trainable(false);
  const std::string text = model->summary_text();
  EXPECT_NE(text.find("Trainable params: 100,480"), std::string::npos) << text;
  EXPECT_NE(text.find("Non-trainable params: 1,290"), std::string::npos) << text;
}

TEST(ModelTest, FitOnAnMnistSubsetReachesTheSetAccuracyAndPredictMatchesEvaluate) {
  auto mnist = testing::load_mnist_subset(2000, 512);
  if (!mnist) GTEST_SKIP() << "MNIST files absent (scripts/fetch_mnist.sh)";
  auto model = seed_model();
  compile_seed(*model);
  data::Dataset train = batches(mnist->x_train, mnist->y_train, 32).shuffle(16, /*seed=*/1);
  data::Dataset test = batches(mnist->x_test, mnist->y_test, 128);
  History h = model->fit(train, {.epochs = 2, .validation_data = test, .verbose = 0});
  ASSERT_EQ(h.epoch, (std::vector<int>{0, 1}));
  EXPECT_LT(h.history.at("loss")[1], h.history.at("loss")[0]);
  ASSERT_EQ(h.history.at("val_accuracy").size(), 2u);

  Logs result = model->evaluate(test, {.verbose = 0});
  EXPECT_GE(result.at("accuracy"), 0.85);
  EXPECT_DOUBLE_EQ(result.at("accuracy"), h.history.at("val_accuracy")[1]);

  HostTensor logits = model->predict(test);
  ASSERT_EQ(logits.dims(), (Dims{512, 10}));
  auto l = logits.data<float>();
  auto y = mnist->y_test.data<int32_t>();
  int correct = 0;
  for (int64_t i = 0; i < 512; ++i) {
    int best = 0;
    for (int c = 1; c < 10; ++c)
      if (l[static_cast<size_t>(i * 10 + c)] > l[static_cast<size_t>(i * 10 + best)]) best = c;
    correct += best == y[static_cast<size_t>(i)];
  }
  EXPECT_NEAR(correct / 512.0, result.at("accuracy"), 1e-6);
  EXPECT_EQ(model->predict(mnist->x_test.slice_rows(0, 100), {.batch_size = 64}).dims(), (Dims{100, 10}));
}

// Counts the train batches of each epoch.
class BatchCounter : public Callback {
 public:
  void on_epoch_begin(int /*epoch*/, const Logs& /*logs*/) override { per_epoch.push_back(0); }
  void on_train_batch_end(int64_t /*batch*/, const Logs& /*logs*/) override { ++per_epoch.back(); }
  std::vector<int64_t> per_epoch;
};

TEST(ModelTest, FitOnArraysTrainsOnEveryRowAndValidatesOnTheLastRows) {
  auto mnist = testing::load_mnist_subset(1000, 0);
  if (!mnist) GTEST_SKIP() << "MNIST files absent (scripts/fetch_mnist.sh)";
  auto model = seed_model();
  compile_seed(*model);
  auto counter = std::make_shared<BatchCounter>();
  // Keras: fit(x, y, batch_size=64, epochs=2, validation_split=0.1).
  History h = model->fit(mnist->x_train, mnist->y_train,
                         {.batch_size = 64, .epochs = 2, .validation_split = 0.1, .callbacks = {counter}, .verbose = 0});
  // 900 training rows: 14 batches of 64 and a last one of 4.
  EXPECT_EQ(counter->per_epoch, (std::vector<int64_t>{15, 15}));
  ASSERT_EQ(h.history.at("val_accuracy").size(), 2u);
  EXPECT_GE(h.history.at("val_accuracy")[1], 0.7);  // chance is 0.1; 30 steps on 900 rows
  // The validation rows are the last 100, cut before shuffling.
  Logs last_rows = model->evaluate(mnist->x_train.slice_rows(900, 1000), mnist->y_train.slice_rows(900, 1000), 64,
                                   {.verbose = 0});
  EXPECT_DOUBLE_EQ(last_rows.at("accuracy"), h.history.at("val_accuracy")[1]);
  EXPECT_DOUBLE_EQ(last_rows.at("loss"), h.history.at("val_loss")[1]);
}

TEST(ModelTest, FitOnArraysShufflesReproduciblyFromItsSeed) {
  auto mnist = testing::load_mnist_subset(256, 0);
  if (!mnist) GTEST_SKIP() << "MNIST files absent (scripts/fetch_mnist.sh)";
  auto weights_after = [&](ArrayFitOptions o) {
    auto model = seed_model();
    compile_seed(*model);
    o.verbose = 0;
    model->fit(mnist->x_train, mnist->y_train, o);
    return model->get_weights();
  };
  auto same = [](const std::vector<HostTensor>& a, const std::vector<HostTensor>& b) {
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].to_vector<float>() != b[i].to_vector<float>()) return false;
    return true;
  };
  const std::vector<HostTensor> seed_1 = weights_after({.batch_size = 32, .seed = 1});
  EXPECT_TRUE(same(seed_1, weights_after({.batch_size = 32, .seed = 1})));
  EXPECT_FALSE(same(seed_1, weights_after({.batch_size = 32, .seed = 2})));
  EXPECT_FALSE(same(seed_1, weights_after({.batch_size = 32, .shuffle = false})));
}

TEST(ModelTest, EvaluateOnArraysWeighsAShortLastBatchByItsRows) {
  auto mnist = testing::load_mnist_subset(100, 0);
  if (!mnist) GTEST_SKIP() << "MNIST files absent (scripts/fetch_mnist.sh)";
  auto model = seed_model();
  compile_seed(*model);
  model->fit(mnist->x_train, mnist->y_train, {.verbose = 0});
  Logs whole = model->evaluate(mnist->x_train, mnist->y_train, 100, {.verbose = 0});
  Logs sevens = model->evaluate(mnist->x_train, mnist->y_train, 7, {.verbose = 0});  // 14 of 7, one of 2
  EXPECT_NEAR(sevens.at("loss"), whole.at("loss"), 1e-5);
  EXPECT_NEAR(sevens.at("accuracy"), whole.at("accuracy"), 1e-9);
}

TEST(ModelTest, RankOneLabelsMeetADenseOneOutputAsKerasMatchesThem) {
  // Logits x . (1, 1) = 1, -1, 4 for labels 1, 0, 0 given as (3,) (text_dataset_from_directory's
  // int labels): Keras gives them the output's axis instead of broadcasting to (3, 3), so the
  // loss is mean(softplus(-1), softplus(-1), softplus(4)) and 2 of 3 logits are on the right side.
  Sequential model({InputLayer({.shape = {2}}), Dense(1, {.kernel_initializer = "ones"})});
  model.compile({.optimizer = "sgd", .loss = BinaryCrossentropy({.from_logits = true}),
                 .metrics = {BinaryAccuracy("binary_accuracy", 0.0)}});
  const HostTensor x = HostTensor::from_vector<float>({3, 2}, {1, 0, 0, -1, 2, 2});
  const double want = (2 * std::log1p(std::exp(-1.0)) + std::log1p(std::exp(4.0))) / 3;
  for (const HostTensor& y : {HostTensor::from_vector<int32_t>({3}, {1, 0, 0}),
                              HostTensor::from_vector<int32_t>({3, 1}, {1, 0, 0})}) {
    SCOPED_TRACE(y.shape().to_string());
    const Logs logs = model.evaluate(x, y, 3, {.verbose = 0});
    EXPECT_NEAR(logs.at("loss"), want, 1e-6);
    EXPECT_NEAR(logs.at("binary_accuracy"), 2.0 / 3, 1e-6);
  }
}

TEST(ModelTest, FitOnArraysRejectsMismatchedRowsAndBadSplits) {
  auto model = seed_model();
  compile_seed(*model);
  HostTensor x(Shape(DType::kF32, {10, 28, 28})), y(Shape(DType::kI32, {9}));
  KILN_EXPECT_ERROR(model->fit(x, y), ShapeError, "10 rows of x");
  HostTensor y10(Shape(DType::kI32, {10}));
  KILN_EXPECT_ERROR(model->fit(x, y10, {.validation_split = 1.0}), ValueError, "validation_split must be in [0, 1)");
  KILN_EXPECT_ERROR(model->fit(x, y10, {.batch_size = 0}), ValueError, "batch_size must be positive");
  KILN_EXPECT_ERROR(model->evaluate(x, y, 4), ShapeError, "9 of y");
}

TEST(ModelTest, StepsPerExecutionGivesTheSameWeightsAndCallbacksSeeEveryStep) {
  auto mnist = testing::load_mnist_subset(640, 1);
  if (!mnist) GTEST_SKIP() << "MNIST files absent (scripts/fetch_mnist.sh)";
  data::Dataset ds = batches(mnist->x_train, mnist->y_train, 64);  // 10 steps, fixed order
  std::vector<std::vector<HostTensor>> weights;
  std::vector<std::vector<double>> losses;
  for (int k : {1, 4}) {
    auto model = seed_model();  // same names -> same initial weights
    compile_seed(*model, k);
    std::vector<int64_t> seen;
    std::vector<double> step_losses;
    auto counter = std::make_shared<LambdaCallback>(LambdaCallbackOptions{
        .on_train_batch_end = [&](int64_t batch, const Logs& logs) {
          seen.push_back(batch);
          step_losses.push_back(logs.at("loss"));
        }});
    model->fit(ds, {.epochs = 1, .callbacks = {counter}, .verbose = 0});
    EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})) << "k=" << k;
    EXPECT_NE(step_losses[0], step_losses[9]);
    if (k == 4) {
      // Steps 0-7 ran as two executions of one 4-step program; the last 2 as one-step calls.
      ASSERT_NE(model->multi_step_train_function(), nullptr);
      EXPECT_EQ(model->multi_step_train_function()->trace_count(), 1);
      // Step 0 and one loop over steps 1-3, not four unrolled steps.
      const std::string ir = ir::to_string(*model->multi_step_train_function()->last_executable()->lowered_module());
      EXPECT_NE(ir.find("trip_count=3"), std::string::npos) << ir;
      EXPECT_EQ(model->train_function()->trace_count(), 1);
    } else {
      EXPECT_EQ(model->multi_step_train_function(), nullptr);
    }
    weights.push_back(model->get_weights());
    losses.push_back(step_losses);
  }
  for (size_t s = 0; s < losses[0].size(); ++s) EXPECT_NEAR(losses[0][s], losses[1][s], 1e-6) << "step " << s;
  for (size_t i = 0; i < weights[0].size(); ++i) {
    const std::vector<float> a = weights[0][i].to_vector<float>(), b = weights[1][i].to_vector<float>();
    for (size_t j = 0; j < a.size(); ++j) ASSERT_NEAR(a[j], b[j], 1e-6f) << "weight " << i << "[" << j << "]";
  }
}

TEST(ModelTest, TheStepsPerExecutionProgramDoesNotGrowWithK) {
  // The loop reads each step's batch in place: no copy of k - 1 batches in the arena (which
  // compile time zeroed: compile time grew with k), and the same kernels for every k.
  std::vector<int64_t> arena, kernels;
  for (int k : {2, 8}) {
    auto model = seed_model();
    compile_seed(*model, k);
    HostTensor x(Shape(DType::kF32, {16 * k, 28, 28})), y(Shape(DType::kI32, {16 * k}));
    model->fit(batches(x, y, 16), {.epochs = 1, .verbose = 0});
    const runtime::Executable* exe = model->multi_step_train_function()->last_executable();
    arena.push_back(exe->planned_activation_bytes());
    kernels.push_back(exe->kernel_count());
  }
  EXPECT_EQ(arena[0], arena[1]);
  EXPECT_EQ(kernels[0], kernels[1]);
}

TEST(ModelTest, SaveWeightsThenLoadWeightsRestoresPredictions) {
  auto model = seed_model();
  model->get_layer("dense").weights()[1].assign(Tensor(HostTensor::from_vector<float>({128}, std::vector<float>(128, 0.5f))));
  const std::string path = ::testing::TempDir() + "/keras_model_test.safetensors";
  model->save_weights(path);
  auto other = std::make_unique<Sequential>(std::vector<LayerHandle>{
      Flatten({.input_shape = {28, 28}}), Dense(128, {.activation = "relu", .name = "dense"}),
      Dense(10, {.kernel_initializer = "zeros", .name = "dense_1"})});
  other->load_weights(path);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(other->get_weights()[i].to_vector<float>(), model->get_weights()[i].to_vector<float>());
  std::remove(path.c_str());
}

TEST(ModelTest, FitBeforeCompileIsAConfigError) {
  auto model = seed_model();
  HostTensor x(Shape(DType::kF32, {4, 28, 28})), y(Shape(DType::kI32, {4}));
  KILN_EXPECT_ERROR(model->fit(batches(x, y, 2)), ConfigError, "needs a compiled model");
}

// Keras reads (x, y, w) as sample weights (#19: they were dropped, so w = 0 still trained):
// weights of 0 give a loss of 0 and leave the model bitwise as it was.
TEST(ModelTest, ElementsWithZeroSampleWeightsDoNotTrain) {
  Sequential model({Flatten({.input_shape = {28, 28}}), Dense(10)});
  model.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  HostTensor x = HostTensor::from_vector<float>({4, 28, 28}, std::vector<float>(4 * 28 * 28, 0.5f));
  HostTensor y = HostTensor::from_vector<int32_t>({4}, {1, 2, 3, 4}), w(Shape(DType::kF32, {4}));
  data::Dataset weighted = data::Dataset::from_tensor_slices({x, y, w}).batch(2, true);
  const std::vector<HostTensor> before = model.get_weights();
  model.fit(weighted, {.epochs = 2, .verbose = 0});
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_EQ(model.get_weights()[i].to_vector<float>(), before[i].to_vector<float>()) << i;
  EXPECT_EQ(model.evaluate(weighted, {.verbose = 0}).at("loss"), 0.0);
  EXPECT_GT(model.evaluate(data::Dataset::from_tensor_slices({x, y}).batch(2, true), {.verbose = 0}).at("loss"), 0.0);
}

TEST(ModelTest, DenseShapeErrorInsideFitNamesTheLayer) {
  Sequential model({Dense(10, {.input_shape = {784}})});
  model.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  HostTensor x(Shape(DType::kF32, {4, 28, 28})), y(Shape(DType::kI32, {4}));
  KILN_EXPECT_ERROR(model.fit(batches(x, y, 2), {.verbose = 0}), ShapeError,
                    "[dense] expected input with last dimension 784, received f32[2,28,28]. Hint: add Flatten()");
}

// A short last batch compiles its own program once, cached across epochs, and says so once.
TEST(ModelTest, AShortLastBatchCompilesOnceAndSaysSo) {
  auto model = seed_model();
  compile_seed(*model);
  HostTensor x(Shape(DType::kF32, {10, 28, 28})), y(Shape(DType::kI32, {10}));
  ::testing::internal::CaptureStderr();
  model->fit(data::Dataset::from_tensor_slices({x, y}).batch(4), {.epochs = 3, .verbose = 0});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(model->train_function()->trace_count(), 2);
  const std::string notice = "the last batch has 2 rows, not 4: the train step compiled once more";
  const size_t at = err.find(notice);
  EXPECT_NE(at, std::string::npos) << err;
  EXPECT_EQ(err.find(notice, at + 1), std::string::npos) << err;
}

// An absurd batch (2^31 rows of 28x28) is refused by the step's memory plan, compiled from
// the dataset's element_spec before the pipeline maps or stacks a single row for a batch.
TEST(ModelTest, AStepTooLargeForMemoryFailsBeforeThePipelineMakesABatch) {
  auto model = seed_model();
  compile_seed(*model);
  HostTensor x(Shape(DType::kU8, {8, 28, 28})), y(Shape(DType::kI32, {8}));
  int calls = 0;
  data::Dataset ds = data::Dataset::from_tensor_slices({x, y})
                         .map([&calls](data::Element e) {
                           ++calls;
                           return data::Element{e[0].astype(DType::kF32), e[1]};
                         })
                         .repeat()
                         .batch(int64_t{1} << 31, /*drop_remainder=*/true);
  KILN_EXPECT_ERROR(model->fit(ds, {.verbose = 0}), OutOfMemoryError, "[train_step] the step needs");
  KILN_EXPECT_ERROR(model->fit(ds, {.verbose = 0}), OutOfMemoryError, "largest batch size that fits is about");
  EXPECT_LE(calls, 2) << "the map ran once per fit to learn its output, not for a batch";
}

// Sizes no device holds (a config's units or input dims of 2^40) are an error naming the
// layer and the bytes before any allocation.
TEST(ModelTest, AbsurdLayerSizesAreAnErrorBeforeAllocating) {
  KILN_EXPECT_ERROR(Sequential({Flatten({.input_shape = {28, 28}}), Dense(int64_t{1} << 40)}), OutOfMemoryError,
                    "[dense] weight 'kernel' f32[784,1099511627776] needs 3448068464705536 bytes, more than the cpu");
  KILN_EXPECT_ERROR(Sequential({Dense(10, {.input_shape = {int64_t{1} << 40}})}), OutOfMemoryError,
                    "weight 'kernel' f32[1099511627776,10] needs");
  LayerHandle dense = layer_from_config("Dense", R"({"name": "big", "units": 1099511627776})");
  KILN_EXPECT_ERROR(dense->build({784}), OutOfMemoryError, "[big] weight 'kernel'");
}

}  // namespace
}  // namespace kiln::keras
