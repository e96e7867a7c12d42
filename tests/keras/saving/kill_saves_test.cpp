// kill -9 during saves (issue 19): for every format, 20 runs of saving_save_driver each saving
// in a loop and killed with SIGKILL at a random point of a save. After every kill the file
// loads and holds one whole save, the last one reported or the one after it (killed after
// its switch); temporary files never pile up (at most the killed writer's, until the next
// save deletes it).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "kiln/io/atomic_file.h"
#include "tests/keras/saving/child_process.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kKills = 20;

struct Leftovers {
  int temp_files = 0;   // AtomicFileWriter's and older .h5 temporary files
  int data_dirs = 0;    // a model directory's data directories
};

// Counts leftovers in `dir` and one level below (a model directory's data directories).
Leftovers leftovers(const fs::path& dir) {
  Leftovers n;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    n.temp_files += io::is_atomic_temp_file_name(name);
    n.data_dirs += e.is_directory() && name.starts_with("data-");
  }
  return n;
}

// "loaded <k>" from the driver's load of `path`, or the failure it reported.
std::string load(const std::string& format, const std::string& path) {
  testing::ChildProcess loader({KILN_SAVE_DRIVER, "load", format, path});
  std::string out = loader.line();
  const int status = loader.wait();
  return status == 0 ? out : "status " + std::to_string(status) + ": " + out;
}

int64_t saved_number(const std::string& line) {
  return line.starts_with("saved ") ? std::stoll(line.substr(6)) : -1;
}

class KillSavesTest : public ::testing::TestWithParam<std::string> {
 protected:
  kiln::testing::TempDir dir_;
};

TEST_P(KillSavesTest, ThePreviousSaveAlwaysLoadsAndNoTemporaryFilesPileUp) {
  const std::string format = GetParam();
  const fs::path where = dir_.path() / "saves";
  fs::create_directories(where);
  const std::string path = (where / (format == "h5" ? "m.h5" : format == "keras" ? "m.keras"
                                     : format == "safetensors"                       ? "w.safetensors"
                                     : format == "checkpoint"                        ? "c.kckpt"
                                                                                     : "m"))
                               .string();
  std::mt19937 rng(1900 + static_cast<unsigned>(format.size()));
  Clock::duration save_time{};
  for (int kill = 0; kill < kKills; ++kill) {
    testing::ChildProcess saver({KILN_SAVE_DRIVER, "save", format, path});
    // The first save of a run completes; the kill then falls at a random point of the saves
    // after it (a save takes save_time, measured on the first run).
    std::string first = saver.line();
    ASSERT_GT(saved_number(first), 0) << "run " << kill << ": " << first;
    int64_t last = saved_number(first);  // the last save the driver reported
    const Clock::time_point t0 = Clock::now();
    if (kill == 0) {
      for (int i = 0; i < 4; ++i) last = std::max(last, saved_number(saver.line()));
      save_time = (Clock::now() - t0) / 4;
    }
    std::this_thread::sleep_for(std::uniform_int_distribution<int64_t>(0, 3 * save_time.count())(rng) *
                                Clock::duration(1));
    saver.kill();
    for (std::string l = saver.line(); !l.empty(); l = saver.line()) last = std::max(last, saved_number(l));
    ASSERT_EQ(saver.wait(), 128 + SIGKILL);

    const std::string loaded = load(format, path);
    ASSERT_TRUE(loaded.starts_with("loaded ")) << format << " run " << kill << ": " << loaded;
    if (format != "backup") {
      // Run k's saves start again at 1.
      const int64_t k = std::stoll(loaded.substr(7));
      EXPECT_TRUE(k == last || k == last + 1) << format << " run " << kill << " loaded save " << k
                                               << " after save " << last << " was reported";
    }
    const Leftovers left = leftovers(where);
    EXPECT_LE(left.temp_files, format == "directory" ? 2 : 1) << format << " run " << kill;
    EXPECT_LE(left.data_dirs, 3) << format << " run " << kill;
  }
  // A save that completes deletes the dead writers' leftovers.
  testing::ChildProcess saver({KILN_SAVE_DRIVER, "save", format, path, "1"});
  while (!saver.line().empty()) {
  }
  ASSERT_EQ(saver.wait(), 0);
  const Leftovers left = leftovers(where);
  EXPECT_EQ(left.temp_files, 0) << format;
  EXPECT_LE(left.data_dirs, 2) << format;
  EXPECT_TRUE(load(format, path).starts_with("loaded ")) << format;
}

// A reader polling a model directory while it is saved over and over gets one whole save
// every time (it once saw mismatched checksums in 109 of 613 reads).
TEST(ReadersDuringSavesTest, EveryLoadOfADirectoryBeingSavedGetsOneWholeSave) {
  kiln::testing::TempDir dir;
  const std::string path = dir.file("m");
  testing::ChildProcess saver({KILN_SAVE_DRIVER, "save", "directory", path});
  ASSERT_GT(saved_number(saver.line()), 0);
  int64_t saves = 0;
  std::thread drain([&] {  // keeps the saver's stdout flowing, so it never blocks
    for (std::string l = saver.line(); !l.empty(); l = saver.line()) saves = saved_number(l);
  });
  for (int i = 0; i < 40; ++i) {
    const std::string loaded = load("directory", path);
    EXPECT_TRUE(loaded.starts_with("loaded ")) << "read " << i << ": " << loaded;
  }
  saver.kill();
  drain.join();
  EXPECT_GT(saves, 10) << "the saves went on during the reads";
}

INSTANTIATE_TEST_SUITE_P(EveryFormat, KillSavesTest,
                         ::testing::Values("h5", "keras", "directory", "safetensors", "checkpoint", "backup"),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

}  // namespace
}  // namespace kiln::keras
