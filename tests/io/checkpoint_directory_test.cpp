#include "kiln/io/checkpoint_directory.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "kiln/core/error.h"
#include "kiln/io/atomic_file.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::io {
namespace {

class CheckpointDirectoryTest : public ::testing::Test {
 protected:
  void touch(const std::string& name) { write_file_atomically(dir_.file(name), "x"); }
  std::string dir() const { return dir_.path().string(); }
  kiln::testing::TempDir dir_;
};

TEST_F(CheckpointDirectoryTest, PathsNameTheStep) {
  EXPECT_EQ(checkpoint_path("/tmp/run", 42), "/tmp/run/ckpt-42.kckpt");
  EXPECT_EQ(checkpoint_path("/tmp/run", 0, "backup"), "/tmp/run/backup-0.kckpt");
  KILN_EXPECT_ERROR(checkpoint_path("/tmp", -1), ValueError, "step=-1");
  KILN_EXPECT_ERROR(checkpoint_path("/tmp", 1, "a/b"), ValueError, "prefix='a/b'");
}

TEST_F(CheckpointDirectoryTest, ListsCheckpointsByStepNumericallyAndSkipsOtherFiles) {
  for (const char* name : {"ckpt-10.kckpt", "ckpt-2.kckpt", "ckpt-1.kckpt", "ckpt-3.kckpt.tmp-abc",
                           "other-5.kckpt", "ckpt-x.kckpt", "ckpt-7.h5", "ckpt-.kckpt"})
    touch(name);
  std::vector<CheckpointFile> found = list_checkpoints(dir());
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].step, 1);
  EXPECT_EQ(found[1].step, 2);
  EXPECT_EQ(found[2].step, 10);
  EXPECT_EQ(found[2].path, dir_.file("ckpt-10.kckpt"));
  EXPECT_EQ(latest_checkpoint(dir())->step, 10);
  EXPECT_EQ(list_checkpoints(dir(), "other").size(), 1u);
}

TEST_F(CheckpointDirectoryTest, MissingDirectoryHasNoCheckpoints) {
  EXPECT_TRUE(list_checkpoints(dir_.file("never_created")).empty());
  EXPECT_FALSE(latest_checkpoint(dir_.file("never_created")).has_value());
}

TEST_F(CheckpointDirectoryTest, AFileInsteadOfADirectoryIsAnIOError) {
  touch("plain");
  KILN_EXPECT_ERROR(list_checkpoints(dir_.file("plain")), IOError, "is not a directory");
}

TEST_F(CheckpointDirectoryTest, PruneKeepsTheNewest) {
  for (int step : {5, 1, 3, 20, 4}) touch("ckpt-" + std::to_string(step) + ".kckpt");
  std::vector<std::string> removed = prune_checkpoints(dir(), 2);
  EXPECT_EQ(removed, (std::vector<std::string>{dir_.file("ckpt-1.kckpt"), dir_.file("ckpt-3.kckpt"),
                                               dir_.file("ckpt-4.kckpt")}));
  std::vector<CheckpointFile> left = list_checkpoints(dir());
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].step, 5);
  EXPECT_EQ(left[1].step, 20);
  EXPECT_TRUE(prune_checkpoints(dir(), 2).empty());
  KILN_EXPECT_ERROR(prune_checkpoints(dir(), 0), ValueError, "max_to_keep=0");
}

}  // namespace
}  // namespace kiln::io
