// ModelCheckpoint (path templates, save_best_only, save_freq, weights-only) and
// BackupAndRestore inside fit (resume mid-epoch gives the uninterrupted run's weights).
#include <gtest/gtest.h>

#include <filesystem>

#include "kiln/keras/saving/saving.h"
#include "tests/keras/saving/saving_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

using namespace testing;
namespace fs = std::filesystem;

TEST(FormatCheckpointPathTest, FillsKerasTemplates) {
  Logs logs;
  logs.set("loss", 0.5);
  logs.set("val_loss", 0.123456);
  EXPECT_EQ(format_checkpoint_path("ckpt/epoch_{epoch:02d}-{val_loss:.4f}.h5", 2, std::nullopt, logs),
            "ckpt/epoch_03-0.1235.h5");
  EXPECT_EQ(format_checkpoint_path("w{epoch}_{batch}{{x}}", 0, 9, logs), "w1_10{x}");
  KILN_EXPECT_ERROR(format_checkpoint_path("{val_acc:.2f}", 0, std::nullopt, logs), ValueError,
                    "{val_acc}, which is not available here; the fields are: epoch, loss, val_loss");
  KILN_EXPECT_ERROR(SaveFrequency("batch"), ValueError, "expected \"epoch\" or a number of batches");
}

// Trains the seed-like case for `epochs` with validation data and the given callbacks.
void fit_with(Model& model, int epochs, std::vector<CallbackHandle> callbacks) {
  auto [x, y] = sample_data({4, 5}, 16);
  auto [vx, vy] = sample_data({4, 5}, 8, 5.0);
  model.fit(data::Dataset::from_tensor_slices({x, y}).batch(4, true),
            {.epochs = epochs, .validation_data = data::Dataset::from_tensor_slices({vx, vy}).batch(4, true),
             .callbacks = std::move(callbacks), .verbose = 0});
}

TEST(ModelCheckpointTest, SavesEveryEpochToTheTemplatedPath) {
  kiln::testing::TempDir dir;
  auto model = build_model(model_cases()[0]);
  compile_model(*model, "adam");
  fit_with(*model, 3, {ModelCheckpoint(dir.file("ckpt/epoch_{epoch:02d}.h5"))});
  for (const char* f : {"ckpt/epoch_01.h5", "ckpt/epoch_02.h5", "ckpt/epoch_03.h5"}) EXPECT_TRUE(fs::exists(dir.file(f))) << f;
  std::unique_ptr<Model> last = load_model(dir.file("ckpt/epoch_03.h5"));
  expect_same_tensors(last->get_weights(), model->get_weights(), "weight");
}

TEST(ModelCheckpointTest, SaveBestOnlyKeepsTheBestMonitoredEpoch) {
  kiln::testing::TempDir dir;
  auto model = build_model(model_cases()[0]);
  compile_model(*model, Adam({.learning_rate = 0.05}));  // large steps: val_loss need not fall every epoch
  std::vector<std::vector<HostTensor>> weights;
  std::vector<double> val_losses;
  auto record = std::make_shared<LambdaCallback>(LambdaCallbackOptions{.on_epoch_end = [&](int, const Logs& logs) {
    weights.push_back(model->get_weights());
    val_losses.push_back(logs.at("val_loss"));
  }});
  auto checkpoint = std::make_shared<ModelCheckpoint>(
      dir.file("best.safetensors"), ModelCheckpointOptions{.save_best_only = true, .save_weights_only = true});
  fit_with(*model, 4, {checkpoint, record});
  const size_t best = static_cast<size_t>(std::min_element(val_losses.begin(), val_losses.end()) - val_losses.begin());
  EXPECT_DOUBLE_EQ(checkpoint->best(), val_losses[best]);
  auto fresh = build_model(model_cases()[0]);
  fresh->load_weights(dir.file("best.safetensors"));
  expect_same_tensors(fresh->get_weights(), weights[best], "best epoch's weight");
}

TEST(ModelCheckpointTest, IntegerSaveFreqSavesEveryNBatches) {
  kiln::testing::TempDir dir;
  auto model = build_model(model_cases()[0]);
  compile_model(*model, "adam");
  fit_with(*model, 2, {ModelCheckpoint(dir.file("w_{epoch}_{batch}.weights.h5"),
                                       {.save_weights_only = true, .save_freq = 3})});
  // 4 batches per epoch: saves after batches 3 (epoch 1), 2 and 6 -> (epoch 2, batch 2), ...
  EXPECT_TRUE(fs::exists(dir.file("w_1_3.weights.h5")));
  EXPECT_TRUE(fs::exists(dir.file("w_2_2.weights.h5")));
  EXPECT_FALSE(fs::exists(dir.file("w_1_4.weights.h5")));
}

TEST(BackupAndRestoreTest, AFitStoppedMidEpochResumesToTheUninterruptedWeights) {
  const ModelCase c = model_cases()[1];  // with Dropout: the RNG state must resume too
  auto [x, y] = sample_data(c.input, 40);
  data::Dataset ds = data::Dataset::from_tensor_slices({x, y}).shuffle(40, /*seed=*/3).batch(4, true);  // 10 steps
  auto reference = build_model(c);
  compile_model(*reference, "adam");
  const History expected = reference->fit(ds, {.epochs = 3, .verbose = 0});

  kiln::testing::TempDir dir;
  const std::string backup = dir.file("backup");
  auto first = build_model(c);
  compile_model(*first, "adam");
  int64_t steps = 0;
  auto stop = std::make_shared<LambdaCallback>(LambdaCallbackOptions{.on_train_batch_end = [&](int64_t, const Logs&) {
    if (++steps == 14) throw std::runtime_error("simulated crash at step 14");  // epoch 2, step 4
  }});
  EXPECT_THROW(first->fit(ds, {.epochs = 3, .callbacks = {BackupAndRestore(backup, {.save_freq = 3}), stop},
                               .verbose = 0}),
               std::runtime_error);
  ASSERT_TRUE(fs::exists(backup));

  auto second = build_model(c);  // a new process: fresh model and optimizer
  compile_model(*second, "adam");
  auto restore = std::make_shared<BackupAndRestore>(backup, BackupAndRestoreOptions{.save_freq = 3});
  int64_t resumed_steps = 0;
  auto count = std::make_shared<LambdaCallback>(
      LambdaCallbackOptions{.on_train_batch_end = [&](int64_t, const Logs&) { ++resumed_steps; }});
  const History resumed = second->fit(ds, {.epochs = 3, .callbacks = {restore, count}, .verbose = 0});
  EXPECT_TRUE(restore->restored());
  EXPECT_EQ(resumed_steps, 30 - 12);  // the last backup was after step 12
  expect_same_tensors(second->get_weights(), reference->get_weights(), "weight");
  // The metric accumulators came back too: the resumed epoch 2 reports the uninterrupted
  // run's averages over all of its steps, not over the steps after the resume.
  for (const std::string key : {"loss", "accuracy"}) {
    ASSERT_EQ(resumed.history.at(key).size(), 2u) << key;  // epochs 2 and 3
    EXPECT_EQ(resumed.history.at(key)[0], expected.history.at(key)[1]) << key;
    EXPECT_EQ(resumed.history.at(key)[1], expected.history.at(key)[2]) << key;
  }
  EXPECT_FALSE(fs::exists(backup)) << "deleted after a completed fit";
}

TEST(BackupAndRestoreTest, EpochBackupsResumeAtTheNextEpoch) {
  const ModelCase c = model_cases()[0];
  auto [x, y] = sample_data(c.input, 16);
  data::Dataset ds = data::Dataset::from_tensor_slices({x, y}).shuffle(16, 1).repeat().batch(4, true);
  auto reference = build_model(c);
  compile_model(*reference, "rmsprop");
  reference->fit(ds, {.epochs = 4, .steps_per_epoch = 3, .verbose = 0});

  kiln::testing::TempDir dir;
  auto first = build_model(c);
  compile_model(*first, "rmsprop");
  auto stop = std::make_shared<LambdaCallback>(LambdaCallbackOptions{.on_epoch_begin = [&](int epoch, const Logs&) {
    if (epoch == 2) throw std::runtime_error("simulated crash in epoch 3");
  }});
  EXPECT_THROW(first->fit(ds, {.epochs = 4, .steps_per_epoch = 3, .callbacks = {BackupAndRestore(dir.file("b")), stop},
                               .verbose = 0}),
               std::runtime_error);
  auto second = build_model(c);
  compile_model(*second, "rmsprop");
  std::vector<int> epochs;
  auto seen = std::make_shared<LambdaCallback>(
      LambdaCallbackOptions{.on_epoch_begin = [&](int epoch, const Logs&) { epochs.push_back(epoch); }});
  second->fit(ds, {.epochs = 4, .steps_per_epoch = 3, .callbacks = {BackupAndRestore(dir.file("b")), seen}, .verbose = 0});
  EXPECT_EQ(epochs, (std::vector<int>{2, 3}));
  expect_same_tensors(second->get_weights(), reference->get_weights(), "weight");
}

TEST(TrainingStateTest, OutsideFitIsAValueError) {
  auto model = build_model(model_cases()[0]);
  KILN_EXPECT_ERROR(model->training_state(), ValueError, "answers inside fit");
}

}  // namespace
}  // namespace kiln::keras
