// `kiln summary` and `kiln inspect` run as a user runs them, on models Kiln saved: summary
// prints exactly model.summary()'s table; inspect names the format, version, weights and
// optimizer state; --help and errors are what a user can act on.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

#include "kiln/keras/keras.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

// stdout and stderr of `kiln <args>`, and its exit status.
std::pair<std::string, int> run_kiln(const std::string& args) {
  std::string out;
  std::FILE* p = popen((std::string(KILN_CLI) + " " + args + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf;
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int status = pclose(p);
  return {out, WEXITSTATUS(status)};
}

std::unique_ptr<Sequential> trained_model() {
  auto model = std::make_unique<Sequential>(
      std::vector<LayerHandle>{Dense(8, {.activation = "relu", .input_shape = {3}, .name = "hidden"}),
                               Dense(2, {.name = "out"})});
  model->compile({.optimizer = Adam({.learning_rate = 0.01}), .loss = "mse"});
  model->fit(HostTensor::from_vector<float>({4, 3}, std::vector<float>(12, 0.5f)),
             HostTensor::from_vector<float>({4, 2}, std::vector<float>(8, 1.0f)), {.epochs = 1, .verbose = 0});
  return model;
}

TEST(KilnCliTest, SummaryPrintsTheSameTableAsModelSummaryForEveryFormat) {
  kiln::testing::TempDir dir;
  auto model = trained_model();
  for (const std::string name : {"m.h5", "m.keras", "m_dir"}) {
    const std::string path = dir.file(name);
    model->save(path);
    const auto [out, status] = run_kiln("summary " + path);
    EXPECT_EQ(status, 0) << out;
    EXPECT_EQ(out, model->summary_text()) << name;
  }
}

TEST(KilnCliTest, InspectListsFormatVersionWeightsAndOptimizerState) {
  kiln::testing::TempDir dir;
  auto model = trained_model();
  const std::string path = dir.file("m.h5");
  model->save(path);
  const auto [out, status] = run_kiln("inspect " + path);
  ASSERT_EQ(status, 0) << out;
  for (const std::string expected :
       {"format: Keras 2 HDF5 (.h5)", "keras_version: 2.", "hidden (Dense)", "hidden/kernel f32[3,8]",
        "out/bias f32[2]", "optimizer: Adam", "50 parameters"})
    EXPECT_NE(out.find(expected), std::string::npos) << "missing '" << expected << "' in\n" << out;
}

TEST(KilnCliTest, HelpForEachCommandAndErrorsNameTheFile) {
  for (const std::string command : {"summary", "inspect", "devices", "mnist"}) {
    const auto [out, status] = run_kiln(command + " --help");
    EXPECT_EQ(status, 0) << out;
    EXPECT_NE(out.find("usage: kiln " + command), std::string::npos) << out;
  }
  const auto [out, status] = run_kiln("summary /nonexistent/model.h5");
  EXPECT_EQ(status, 1);
  EXPECT_NE(out.find("/nonexistent/model.h5"), std::string::npos) << out;
  EXPECT_EQ(run_kiln("frobnicate").second, 2);
}

}  // namespace
}  // namespace kiln::keras
