// Kill -9 tests (S27): the driver (resume_driver.cpp) is killed with SIGKILL at a random
// step, rerun with the same command, and must end with weights bit-identical to an
// uninterrupted run; and killed in the middle of a backup write, after which the previous
// backup still loads and the rerun still ends bit-identical.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "kiln/io/atomic_file.h"
#include "kiln/io/file_reader.h"
#include "kiln/keras/keras.h"
#include "tests/keras/saving/child_process.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

namespace fs = std::filesystem;

// A running driver whose stdout we read line by line.
class Driver : public testing::ChildProcess {
 public:
  Driver(const std::string& backup_dir, const std::string& out, bool slow_writes)
      : ChildProcess(slow_writes ? std::vector<std::string>{KILN_RESUME_DRIVER, backup_dir, out, "--slow-writes"}
                                 : std::vector<std::string>{KILN_RESUME_DRIVER, backup_dir, out}) {}
};

// Runs the driver to the end; returns its status.
int run_to_end(const std::string& backup_dir, const std::string& out) {
  Driver d(backup_dir, out, /*slow_writes=*/false);
  while (!d.line().empty()) {
  }
  return d.wait();
}

class KillResumeTest : public ::testing::Test {
 protected:
  // One uninterrupted run serves both tests.
  static void SetUpTestSuite() {
    kiln::testing::TempDir dir;
    status_ = run_to_end(dir.file("reference_backup"), dir.file("reference.safetensors"));
    if (status_ == 0) {
      reference_ = io::read_file(dir.file("reference.safetensors"));
      backups_left_ = fs::exists(dir.file("reference_backup"));
    }
  }
  void SetUp() override {
    if (status_ == 77) GTEST_SKIP() << "MNIST files absent (scripts/fetch_mnist.sh)";
    ASSERT_EQ(status_, 0) << "the uninterrupted run failed";
    EXPECT_FALSE(backups_left_) << "the backups are deleted at the end";
  }
  static inline int status_ = -1;
  static inline std::string reference_;
  static inline bool backups_left_ = false;
  kiln::testing::TempDir dir_;
};

TEST_F(KillResumeTest, KilledAtRandomStepsThenRerunEndsBitIdentical) {
  std::mt19937 rng(20261202);
  const std::string backup = dir_.file("backup"), out = dir_.file("resumed.safetensors");
  // Two kills at random steps of the 96 (3 epochs x 32), the second in a resumed run.
  int64_t killed_at = 0;
  for (int kill = 0; kill < 2; ++kill) {
    const int64_t target = killed_at + 3 + static_cast<int64_t>(rng() % 40);
    Driver d(backup, out, /*slow_writes=*/false);
    for (std::string l = d.line(); !l.empty(); l = d.line()) {
      if (l.rfind("step ", 0) == 0 && std::stoll(l.substr(5)) >= target) {
        d.kill();
        killed_at = target;
        break;
      }
    }
    ASSERT_EQ(d.wait(), 128 + SIGKILL) << "kill " << kill << " at step " << target;
    ASSERT_TRUE(fs::exists(backup)) << "a backup exists after step " << target;
  }
  ASSERT_FALSE(fs::exists(out));
  ASSERT_EQ(run_to_end(backup, out), 0);
  EXPECT_TRUE(io::read_file(out) == reference_) << "final weights differ from the uninterrupted run's";
}

TEST_F(KillResumeTest, KilledDuringABackupWriteThePreviousBackupLoadsAndTheRerunEndsBitIdentical) {
  const std::string backup = dir_.file("backup"), out = dir_.file("resumed.safetensors");
  int mid_write_kills = 0;
  for (int attempt = 0; attempt < 3 && mid_write_kills == 0; ++attempt) {
    Driver d(backup, out, /*slow_writes=*/true);
    // Wait for the second backup's temporary file (the first backup is then complete).
    bool killed = false;
    int backups_seen = 0;
    std::string seen_temp;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!killed && std::chrono::steady_clock::now() < deadline) {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(backup, ec)) {
        const std::string name = e.path().filename().string();
        if (io::is_atomic_temp_file_name(name) && name != seen_temp) {
          seen_temp = name;
          if (++backups_seen == 2) {
            d.kill();
            killed = true;
          }
          break;
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ASSERT_TRUE(killed) << "no backup write seen";
    ASSERT_EQ(d.wait(), 128 + SIGKILL);
    // A temporary file left behind proves the kill landed mid-write.
    bool temp_left = false;
    for (const auto& e : fs::directory_iterator(backup))
      temp_left |= io::is_atomic_temp_file_name(e.path().filename().string());
    mid_write_kills += temp_left;
    // Whatever the kill interrupted, the newest complete backup loads.
    Sequential model({Flatten({.input_shape = {28, 28}}), Dense(128, {.activation = "relu"}), Dropout(0.2), Dense(10)});
    model.compile({.optimizer = Adam(), .loss = SparseCategoricalCrossentropy({.from_logits = true})});
    CheckpointManager manager(Checkpoint(model), backup, {.prefix = "backup"});
    ASSERT_TRUE(manager.latest_checkpoint().has_value());
    std::optional<TrainingState> state = manager.restore();
    ASSERT_TRUE(state.has_value());
    EXPECT_GT(model.optimizer()->iterations().storage().to_vector<int64_t>()[0], 0);
  }
  EXPECT_GT(mid_write_kills, 0) << "no kill landed inside a write";
  ASSERT_EQ(run_to_end(backup, out), 0);
  EXPECT_TRUE(io::read_file(out) == reference_) << "final weights differ from the uninterrupted run's";
}

}  // namespace
}  // namespace kiln::keras
