// `kiln report` on a log directory a real fit wrote (TensorBoard with validation, batch scalars
// and a profiled window): one chart per scalar with one point per logged value, the values
// themselves, the traced steps and the kernel table; then the page opened in headless Chromium
// (chromium_check.py: a screenshot with the charts' colours, the rendered DOM's point counts).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "kiln/keras/keras.h"
#include "kiln/io/file_reader.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/kiln/run_kiln.h"

namespace kiln::keras {
namespace {

using kiln::testing::run_kiln;

constexpr int kEpochs = 3;
constexpr int kStepsPerEpoch = 4;  // 32 rows in batches of 8

data::Dataset line_batches(int n, float offset) {
  std::vector<float> xs, ys;
  for (int i = 0; i < n; ++i) {
    xs.push_back(offset + static_cast<float>(i) / static_cast<float>(n));
    ys.push_back(2.0f * xs.back() - 1.0f);
  }
  return data::Dataset::from_tensor_slices(
             {HostTensor::from_vector<float>({n, 1}, xs), HostTensor::from_vector<float>({n, 1}, ys)})
      .batch(8, /*drop_remainder=*/true);
}

class KilnReportTest : public ::testing::Test {
 protected:
  // A fit of kEpochs with validation, batch scalars every step and train steps 2-4 traced.
  void SetUp() override {
    Sequential model({Dense(4, {.activation = "relu", .input_shape = {1}}), Dense(1)});
    model.compile({.optimizer = SGD({.learning_rate = 0.05}), .loss = "mse", .metrics = {"mae"}});
    auto tb = std::make_shared<callbacks::TensorBoard>(
        log_dir(), TensorBoardOptions{.update_freq = "batch", .write_graph = false, .profile_batch = {2, 4}});
    history_ = model.fit(line_batches(32, 0.0f),
                         {.epochs = kEpochs, .validation_data = line_batches(16, 0.5f), .callbacks = {tb}, .verbose = 0});
  }
  std::string log_dir() const { return dir_.file("logs"); }

  // data-points and the number of x,y pairs of each polyline, by "chart/series".
  std::map<std::string, std::pair<int, int>> polylines(const std::string& html) {
    std::map<std::string, std::pair<int, int>> found;
    const std::regex chart(R"re(<svg[^>]* data-chart="([^"]*)")re");
    const std::regex line(R"re(<polyline class="series" data-series="([^"]*)" data-points="(\d+)"[^>]* points="([^"]*)")re");
    const std::regex element(R"re(<svg[^>]*>|<polyline[^>]*>)re");
    std::string current;
    for (std::sregex_iterator it(html.begin(), html.end(), element), end;
         it != end; ++it) {
      const std::string tag = it->str();
      std::smatch m;
      if (std::regex_search(tag, m, chart)) current = m[1];
      if (!std::regex_search(tag, m, line)) continue;
      const std::string points = m[3];
      const int pairs = points.empty() ? 0 : static_cast<int>(std::count(points.begin(), points.end(), ' ')) + 1;
      found[current + "/" + m[1].str()] = {std::stoi(m[2]), pairs};
    }
    return found;
  }

  kiln::testing::TempDir dir_;
  History history_;
};

TEST_F(KilnReportTest, ChartsEveryScalarWithOnePointPerLoggedValue) {
  const auto [out, status] = run_kiln("report " + log_dir());
  ASSERT_EQ(status, 0) << out;
  const std::string html = io::read_file(dir_.file("logs/report.html"));
  const auto lines = polylines(html);
  const std::map<std::string, std::pair<int, int>> expected = {
      {"epoch_loss/train", {kEpochs, kEpochs}},
      {"epoch_loss/validation", {kEpochs, kEpochs}},
      {"epoch_mae/train", {kEpochs, kEpochs}},
      {"epoch_mae/validation", {kEpochs, kEpochs}},
      {"epoch_learning_rate/train", {kEpochs, kEpochs}},
      {"batch_loss/train", {kEpochs * kStepsPerEpoch, kEpochs * kStepsPerEpoch}},
      {"batch_mae/train", {kEpochs * kStepsPerEpoch, kEpochs * kStepsPerEpoch}},
      {"evaluation_loss_vs_iterations/validation", {kEpochs, kEpochs}},
      {"evaluation_mae_vs_iterations/validation", {kEpochs, kEpochs}},
      {"step time and input wait (ms)/step time", {3, 3}},  // profile_batch {2, 4}
      // Step 2's wait for its batch comes before the window opens (on_train_batch_begin).
      {"step time and input wait (ms)/input wait", {2, 2}},
  };
  EXPECT_EQ(lines, expected) << html;
  // Each point's value, as fit returned it (the event files hold f32).
  for (int e = 0; e < kEpochs; ++e)
    for (const auto& [key, run] : {std::pair{"loss", "train"}, std::pair{"val_loss", "validation"}}) {
      char title[64];
      std::snprintf(title, sizeof title, "<title>%s %d: %.6g</title>", run, e,
                    static_cast<double>(static_cast<float>(history_.history.at(key)[static_cast<size_t>(e)])));
      EXPECT_NE(html.find(title), std::string::npos) << title;
    }
  // The kernel table has the traced window's kernels; the page has nothing to run or fetch.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(html, m, std::regex(R"re(<table class="kernels" data-rows="(\d+)")re")));
  EXPECT_GT(std::stoi(m[1]), 0);
  EXPECT_NE(html.find("matmul"), std::string::npos);
  for (const std::string banned : {"<script", "src=", "href=", "@import", "url("})
    EXPECT_EQ(html.find(banned), std::string::npos) << banned;
  EXPECT_NE(out.find("7 scalar charts"), std::string::npos) << out;
}

TEST_F(KilnReportTest, PageRendersInHeadlessChromium) {
  const std::string page = dir_.file("page.html");
  const auto [out, status] = run_kiln("report " + log_dir() + " -o " + page);
  ASSERT_EQ(status, 0) << out;
  const std::string epochs = std::to_string(kEpochs), batches = std::to_string(kEpochs * kStepsPerEpoch);
  const std::string command = "/usr/bin/python3 " KILN_CHROMIUM_CHECK " " + page + " " + dir_.file("page.png") +
                              " epoch_loss/train=" + epochs + " epoch_loss/validation=" + epochs +
                              " epoch_mae/validation=" + epochs + " batch_loss/train=" + batches +
                              " 'step time and input wait (ms)/step time=3'";
  const auto [check, code] = kiln::testing::run_command(command);
  if (code == 77) GTEST_SKIP() << check;  // no chromium on this machine
  EXPECT_EQ(code, 0) << check;
}

TEST_F(KilnReportTest, TraceOptionTakesAnotherTrace) {
  // A trace of two steps of 1.5 ms and 2.5 ms, with a 0.25 ms wait for the second's input.
  std::ofstream(dir_.file("fit.json")) << R"({"traceEvents": [
      {"name": "fit_step", "cat": "step", "ph": "X", "ts": 0, "dur": 1500, "pid": 1, "tid": 0},
      {"name": "input_wait", "cat": "input", "ph": "X", "ts": 1600, "dur": 250, "pid": 1, "tid": 0},
      {"name": "fit_step", "cat": "step", "ph": "X", "ts": 2000, "dur": 2500, "pid": 1, "tid": 0},
      {"name": "matmul", "cat": "kernel", "ph": "X", "ts": 2100, "dur": 1000, "pid": 1, "tid": 0,
       "args": {"flops": 2000000000}}]})";
  const auto [out, status] = run_kiln("report " + log_dir() + " --trace " + dir_.file("fit.json"));
  ASSERT_EQ(status, 0) << out;
  const std::string html = io::read_file(dir_.file("logs/report.html"));
  const auto lines = polylines(html);
  EXPECT_EQ(lines.at("step time and input wait (ms)/step time"), std::make_pair(2, 2));
  EXPECT_EQ(lines.at("step time and input wait (ms)/input wait"), std::make_pair(1, 1));
  for (const std::string expected : {"<title>step time 1: 1.5</title>", "<title>step time 2: 2.5</title>",
                                     "<title>input wait 2: 0.25</title>", "2000.0 GFLOP/s", ">matmul</td>"})
    EXPECT_NE(html.find(expected), std::string::npos) << expected;
}

TEST_F(KilnReportTest, ErrorsNameTheDirectoryAndWhatToPass) {
  auto [out, status] = run_kiln("report " + dir_.file("nowhere"));
  EXPECT_EQ(status, 1);
  EXPECT_NE(out.find(dir_.file("nowhere") + "] is not a directory"), std::string::npos) << out;
  std::ofstream(dir_.file("cut.json")) << R"({"traceEvents": [{"name": "fit_step", "ph": "X", "ts": )";
  std::tie(out, status) = run_kiln("report " + log_dir() + " --trace " + dir_.file("cut.json"));
  EXPECT_EQ(status, 1);
  EXPECT_NE(out.find(dir_.file("cut.json") + "] is not a Chrome trace Kiln can read"), std::string::npos) << out;
  std::ofstream(dir_.file("wrong.json")) << R"({"traceEvents": [{"name": "fit_step", "ph": "X", "ts": "soon"}]})";
  std::tie(out, status) = run_kiln("report " + log_dir() + " --trace " + dir_.file("wrong.json"));
  EXPECT_EQ(status, 1);
  EXPECT_NE(out.find(dir_.file("wrong.json") + "] is not a Chrome trace Kiln can read"), std::string::npos) << out;
  std::filesystem::create_directories(dir_.file("empty"));
  std::tie(out, status) = run_kiln("report " + dir_.file("empty"));
  EXPECT_EQ(status, 1);
  EXPECT_NE(out.find("holds no TensorBoard event files"), std::string::npos) << out;
}

}  // namespace
}  // namespace kiln::keras
