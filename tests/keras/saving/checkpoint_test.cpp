// Checkpoint and CheckpointManager: the whole training state round-trips (weights, optimizer
// slots and iterations, RNG counters, epoch, step, iterator position), numbered files are
// pruned to max_to_keep, and restore() falls back past a damaged newest file.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kiln/io/atomic_file.h"
#include "kiln/io/checkpoint_directory.h"
#include "kiln/io/file_reader.h"
#include "kiln/keras/saving/checkpoint.h"
#include "tests/keras/saving/saving_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

using namespace testing;

ModelCase dropout_case() { return model_cases()[1]; }  // Dense, Dropout, ...: RNG state

TEST(CheckpointTest, RestoresWeightsOptimizerRngAndTrainingState) {
  kiln::testing::TempDir dir;
  auto model = build_model(dropout_case());
  compile_model(*model, "adam");
  train(*model, dropout_case().input, 3);
  Checkpoint(*model).write(dir.file("c.kckpt"), {.epoch = 2, .step_in_epoch = 7, .iterator_state = {1, 2, 3}});

  auto restored = build_model(dropout_case());
  compile_model(*restored, "adam");
  TrainingState s = Checkpoint(*restored).read(dir.file("c.kckpt"));
  EXPECT_EQ(s.epoch, 2);
  EXPECT_EQ(s.step_in_epoch, 7);
  EXPECT_EQ(s.iterator_state, (std::vector<uint8_t>{1, 2, 3}));
  expect_same_tensors(restored->get_weights(), model->get_weights(), "weight");
  expect_same_tensors(values_of(restored->optimizer()->variables()), values_of(model->optimizer()->variables()),
                      "optimizer variable");
  const Dropout& d = dynamic_cast<const Dropout&>(model->get_layer("dropout"));
  const Dropout& rd = dynamic_cast<const Dropout&>(restored->get_layer("dropout"));
  EXPECT_EQ(rd.seed_state().storage().to_vector<int64_t>(), (std::vector<int64_t>{3}));
  EXPECT_EQ(rd.seed_state().storage().to_vector<int64_t>(), d.seed_state().storage().to_vector<int64_t>());
  // Dropout draws the same masks from here on: training continues bit-identically.
  train(*model, dropout_case().input, 2, /*phase=*/3.0);
  train(*restored, dropout_case().input, 2, /*phase=*/3.0);
  expect_same_tensors(restored->get_weights(), model->get_weights(), "weight after two more steps");
}

TEST(CheckpointTest, ArchitectureMismatchIsAnIOErrorAndAssignsNothing) {
  kiln::testing::TempDir dir;
  auto model = build_model(model_cases()[0]);
  Checkpoint(*model).write(dir.file("c.kckpt"));
  Sequential other({InputLayer({.shape = {4, 5}}), Flatten(), Dense(9), Dense(3)});
  const std::vector<HostTensor> before = other.get_weights();
  KILN_EXPECT_ERROR(Checkpoint(other).read(dir.file("c.kckpt")), IOError, "has shape");
  expect_same_tensors(other.get_weights(), before, "untouched weight");
  Sequential fewer({InputLayer({.shape = {4, 5}}), Flatten(), Dense(3)});
  KILN_EXPECT_ERROR(Checkpoint(fewer).read(dir.file("c.kckpt")), IOError, "holds 4 model weights");
}

TEST(CheckpointManagerTest, KeepsTheNewestAndRestoresTheLatest) {
  kiln::testing::TempDir dir;
  auto model = build_model(model_cases()[0]);
  compile_model(*model, "sgd");
  CheckpointManager manager(Checkpoint(*model), dir.file("ckpts"), {.max_to_keep = 2});
  EXPECT_FALSE(manager.restore().has_value());
  std::vector<HostTensor> at_step3;
  for (int i = 1; i <= 3; ++i) {
    train(*model, model_cases()[0].input, 1, i);
    EXPECT_EQ(manager.save({.epoch = i}), dir.file("ckpts/ckpt-" + std::to_string(i) + ".kckpt"));
    if (i == 3) at_step3 = model->get_weights();
  }
  EXPECT_EQ(manager.checkpoints(), (std::vector<std::string>{dir.file("ckpts/ckpt-2.kckpt"), dir.file("ckpts/ckpt-3.kckpt")}));
  train(*model, model_cases()[0].input, 1, 9.0);
  std::optional<TrainingState> s = manager.restore();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->epoch, 3);
  expect_same_tensors(model->get_weights(), at_step3, "weight");
}

// BackupAndRestore writes a new step each time, so a killed backup's temporary file is never
// the target of a later write: the manager deletes the dead writers' ones on every save.
TEST(CheckpointManagerTest, SaveDeletesTheTemporaryFilesOfKilledWritesOfOtherSteps) {
  kiln::testing::TempDir dir;
  auto model = build_model(model_cases()[0]);
  compile_model(*model, "sgd");
  CheckpointManager manager(Checkpoint(*model), dir.file("ckpts"), {.prefix = "backup"});
  manager.save({}, 1);
  const pid_t killed = ::fork();
  if (killed == 0) {
    auto* w = new io::AtomicFileWriter(io::checkpoint_path(dir.file("ckpts"), 2, "backup"));  // never destroyed
    w->write("half a checkpoint");
    ::_exit(0);
  }
  ::waitpid(killed, nullptr, 0);
  auto temp_files = [&] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.file("ckpts")))
      n += io::is_atomic_temp_file_name(e.path().filename().string());
    return n;
  };
  ASSERT_EQ(temp_files(), 1);
  manager.save({}, 3);
  EXPECT_EQ(temp_files(), 0);
  EXPECT_EQ(manager.checkpoints().size(), 2u);
}

TEST(CheckpointManagerTest, RestoreSkipsADamagedNewestCheckpoint) {
  kiln::testing::TempDir dir;
  auto model = build_model(model_cases()[0]);
  compile_model(*model, "sgd");
  CheckpointManager manager(Checkpoint(*model), dir.path().string());
  train(*model, model_cases()[0].input, 1);
  manager.save({.epoch = 1});
  const std::vector<HostTensor> good = model->get_weights();
  train(*model, model_cases()[0].input, 1, 1.0);
  const std::string newest = manager.save({.epoch = 2});
  std::string bytes = io::read_file(newest);
  bytes[bytes.size() / 2] ^= 0x40;
  std::ofstream(newest, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  std::optional<TrainingState> s = manager.restore();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->epoch, 1);
  expect_same_tensors(model->get_weights(), good, "weight");
  KILN_EXPECT_ERROR(Checkpoint(*model).read(newest), IOError, newest);
}

TEST(CheckpointManagerTest, RestoresOntoAModelCompiledAfresh) {
  // What a restart does: a new process, a new model and optimizer, slots not yet created.
  kiln::testing::TempDir dir;
  auto model = build_model(model_cases()[0]);
  compile_model(*model, optimizer_cases()[4].make());
  train(*model, model_cases()[0].input, 2);
  CheckpointManager(Checkpoint(*model), dir.path().string()).save();
  auto fresh = build_model(model_cases()[0]);
  compile_model(*fresh, optimizer_cases()[4].make());
  ASSERT_FALSE(fresh->optimizer()->slots_created());
  ASSERT_TRUE(CheckpointManager(Checkpoint(*fresh), dir.path().string()).restore().has_value());
  expect_same_tensors(values_of(fresh->optimizer()->variables()), values_of(model->optimizer()->variables()),
                      "optimizer variable");
}

}  // namespace
}  // namespace kiln::keras
