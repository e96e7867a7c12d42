// Profiler callback and KILN_PROFILE=<file>.json: the Chrome trace of real train steps parses,
// every event has the Trace Event Format's fields, and its kernels are exactly the compiled
// step's kernels, once per profiled step.
#include "kiln/keras/callbacks/profiler.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kiln/runtime/executable.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

data::Dataset ramp(int n) {
  std::vector<float> xs(static_cast<size_t>(n) * 4), ys(static_cast<size_t>(n));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 7) / 7.0f;
  for (size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<float>(i % 3);
  return data::Dataset::from_tensor_slices({HostTensor::from_vector<float>({n, 4}, xs),
                                            HostTensor::from_vector<float>({n, 1}, ys)})
      .map([](const data::Element& e) { return e; })
      .batch(8, /*drop_remainder=*/true);
}

std::unique_ptr<Sequential> small_model() {
  auto model = std::make_unique<Sequential>(
      std::vector<LayerHandle>{Dense(16, {.activation = "relu", .input_shape = {4}}), Dense(1)});
  model->compile({.optimizer = Adam({.learning_rate = 0.01}), .loss = "mse"});
  return model;
}

// The labels of the compiled program's steps, from describe()'s "  step i: label  # source".
std::multiset<std::string> step_labels(const runtime::Executable& exe) {
  std::multiset<std::string> labels;
  std::istringstream in(exe.describe());
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find(": ");
    if (line.rfind("  step ", 0) != 0 || at == std::string::npos) continue;
    std::string label = line.substr(at + 2);
    if (size_t hash = label.find("  # "); hash != std::string::npos) label.resize(hash);
    labels.insert(label);
  }
  return labels;
}

// Checks the Trace Event Format and returns the "X" events.
std::vector<nlohmann::json> complete_events(const std::string& path) {
  nlohmann::json trace = nlohmann::json::parse(std::ifstream(path));  // throws on invalid JSON
  EXPECT_TRUE(trace.contains("traceEvents"));
  std::vector<nlohmann::json> out;
  for (const auto& e : trace["traceEvents"]) {
    for (const char* field : {"name", "ph", "pid", "tid"}) EXPECT_TRUE(e.contains(field)) << e.dump();
    if (e["ph"] != "X") continue;
    for (const char* field : {"cat", "ts", "dur", "args"}) EXPECT_TRUE(e.contains(field)) << e.dump();
    EXPECT_GE(e["dur"].get<double>(), 0.0) << e.dump();
    EXPECT_GE(e["ts"].get<double>(), 0.0) << e.dump();
    out.push_back(e);
  }
  return out;
}

TEST(ProfilerTest, TracesEveryKernelOfTheProfiledStepsAndTheInputPipeline) {
  kiln::testing::TempDir dir;
  auto model = small_model();
  auto profiler = std::make_shared<Profiler>((dir.path() / "logs").string(), ProfilerOptions{.profile_batch = {2, 3}});
  model->fit(ramp(64), {.epochs = 1, .callbacks = {profiler}, .verbose = 0});
  ASSERT_FALSE(profiler->trace_path().empty());
  EXPECT_TRUE(profiler->trace_path().find("/logs/plugins/profile/") != std::string::npos) << profiler->trace_path();
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(profiler->trace_path()).replace_extension("")
                                          .replace_extension(".kernels.txt")));

  const runtime::Executable* exe = model->train_function()->last_executable();
  const std::multiset<std::string> labels = step_labels(*exe);
  ASSERT_EQ(static_cast<int>(labels.size()), exe->kernel_count());
  std::multiset<std::string> kernels;
  int steps = 0, input_waits = 0, batch_stages = 0, train_steps = 0;
  for (const auto& e : complete_events(profiler->trace_path())) {
    if (e["cat"] == "kernel") kernels.insert(e["name"].get<std::string>());
    steps += e["cat"] == "step" && e["name"] == "train_step";
    train_steps += e["cat"] == "step" && e["name"] == "fit_step";
    input_waits += e["name"] == "input_wait";
    batch_stages += e["cat"] == "input" && e["name"] == "batch";
  }
  // Steps 2 and 3: each kernel of the program twice, nothing else.
  std::multiset<std::string> twice = labels;
  twice.insert(labels.begin(), labels.end());
  EXPECT_EQ(kernels, twice);
  EXPECT_EQ(steps, 2);  // the program's own event per run
  EXPECT_EQ(train_steps, 2);  // the trainer's step events
  // Step 2's batch was read before the window opened (fit reads a step's batches before its
  // on_train_batch_begin), step 3's inside it.
  EXPECT_GE(input_waits, 1);
  EXPECT_GE(batch_stages, 1);
  EXPECT_NE(profiler->summary().find("share"), std::string::npos) << profiler->summary();
  EXPECT_NE(profiler->summary().find("GFLOP/s"), std::string::npos) << profiler->summary();  // the matmuls
}

TEST(ProfilerTest, AWindowPastTheEndIsWrittenWhenFitEnds) {
  kiln::testing::TempDir dir;
  auto model = small_model();
  auto profiler = std::make_shared<Profiler>(dir.path().string(), ProfilerOptions{.profile_batch = {7, 100}});
  model->fit(ramp(64), {.epochs = 1, .callbacks = {profiler}, .verbose = 0});  // 8 steps
  ASSERT_FALSE(profiler->trace_path().empty());
  int kernels = 0;
  for (const auto& e : complete_events(profiler->trace_path())) kernels += e["cat"] == "kernel";
  EXPECT_EQ(kernels, 2 * model->train_function()->last_executable()->kernel_count());
}

TEST(ProfilerTest, BadWindowsAreValueErrors) {
  EXPECT_THROW(Profiler("logs", {.profile_batch = {0, 2}}), ValueError);
  EXPECT_THROW(Profiler("logs", {.profile_batch = {3, 2}}), ValueError);
}

// KILN_PROFILE is read once per process, so the fit runs in a child: this test binary again,
// filtered to the next test, which only runs when the parent set KILN_PROFILE_CHILD.
TEST(ProfilerTest, KilnProfileJsonTracesTheWholeFitWithItsCompilePasses) {
  kiln::testing::TempDir dir;
  const std::string trace = dir.file("fit.json");
  const std::string command = "KILN_PROFILE_CHILD=1 KILN_PROFILE=" + trace + " " +
                              std::filesystem::read_symlink("/proc/self/exe").string() +
                              " --gtest_filter=ProfilerTest.ChildFitUnderKilnProfile > " + dir.file("log.txt") +
                              " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << std::ifstream(dir.file("log.txt")).rdbuf();
  std::stringstream log;
  log << std::ifstream(dir.file("log.txt")).rdbuf();
  EXPECT_NE(log.str().find("KILN_PROFILE: trace written to " + trace), std::string::npos) << log.str();
  std::set<std::string> passes;
  int kernels = 0;
  for (const auto& e : complete_events(trace)) {
    if (e["cat"] == "compile") passes.insert(e["name"].get<std::string>());
    kernels += e["cat"] == "kernel";
  }
  for (const char* pass : {"cse", "dce", "lowering", "memory-planning", "compile"})
    EXPECT_TRUE(passes.contains(pass)) << pass << " not among the compile events";
  EXPECT_GT(kernels, 0);
}

TEST(ProfilerTest, ChildFitUnderKilnProfile) {
  if (std::getenv("KILN_PROFILE_CHILD") == nullptr) GTEST_SKIP() << "runs as the child of the test above";
  auto model = small_model();
  model->fit(ramp(32), {.epochs = 1, .verbose = 0});
}

}  // namespace
}  // namespace kiln::keras
