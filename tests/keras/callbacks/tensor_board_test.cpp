// TensorBoard callback: a real fit writes train/ and validation/ event files; an independent
// reader (tests/io/tfevents_reader.py) decodes them and every scalar is checked against what
// fit returned (the History) or knew (the learning rate, the weights, the compiled step).
#include "kiln/keras/callbacks/tensor_board.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "kiln/ir/module.h"
#include "kiln/runtime/executable.h"
#include "kiln/trace/ops/elementwise.h"
#include "tests/io/tfevents_decode.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

using io::testing::scalars;

// y = 2x - 1 on 48 points in 6 batches of 8; validation on 16 other points.
data::Dataset line(int n, float offset) {
  std::vector<float> xs(static_cast<size_t>(n)), ys(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    xs[static_cast<size_t>(i)] = offset + static_cast<float>(i) / static_cast<float>(n);
    ys[static_cast<size_t>(i)] = 2.0f * xs[static_cast<size_t>(i)] - 1.0f;
  }
  return data::Dataset::from_tensor_slices({HostTensor::from_vector<float>({n, 1}, xs),
                                            HostTensor::from_vector<float>({n, 1}, ys)})
      .batch(8, /*drop_remainder=*/true);
}

class TensorBoardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!io::testing::python_has("google.protobuf"))
      GTEST_SKIP() << "/usr/bin/python3 lacks protobuf (apt-get install python3-protobuf)";
  }
  // The events of the one file under log_dir/<run>.
  nlohmann::json events(const std::string& run) {
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path() / "logs" / run))
      files.push_back(e.path().string());
    EXPECT_EQ(files.size(), 1u) << run;
    nlohmann::json decoded = io::testing::decode_event_files(files, dir_.file(run + ".json"));
    EXPECT_EQ(decoded.size(), files.size());
    return decoded.empty() ? nlohmann::json::array() : decoded[0]["events"];
  }
  kiln::testing::TempDir dir_;
};

TEST_F(TensorBoardTest, EveryScalarMatchesWhatFitReturned) {
  Sequential model({Dense(1, {.input_shape = {1}, .name = "dense"})});
  MeanMetricWrapper mae("mae", [](const Tensor& y_true, const Tensor& y_pred) { return kiln::abs(y_true - y_pred); });
  model.compile({.optimizer = SGD({.learning_rate = 0.05}), .loss = "mse", .metrics = {mae}});
  auto tb = std::make_shared<TensorBoard>(
      (dir_.path() / "logs").string(), TensorBoardOptions{.update_freq = int64_t{4}, .histogram_freq = 2});
  std::vector<Logs> batch_logs;  // what on_train_batch_end saw, in order
  auto spy = std::make_shared<LambdaCallback>(
      LambdaCallbackOptions{.on_train_batch_end = [&](int64_t, const Logs& l) { batch_logs.push_back(l); }});
  History h = model.fit(line(48, 0.0f), {.epochs = 3, .validation_data = line(16, 0.5f), .callbacks = {tb, spy},
                                         .verbose = 0});
  ASSERT_EQ(h.epoch.size(), 3u);
  ASSERT_EQ(batch_logs.size(), 18u);
  EXPECT_EQ(tb->event_files().size(), 2u);

  const nlohmann::json train = events("train");
  const nlohmann::json validation = events("validation");
  ASSERT_FALSE(train.empty());
  ASSERT_FALSE(validation.empty());
  EXPECT_EQ(train[0]["file_version"], "brain.Event:2");
  EXPECT_EQ(validation[0]["file_version"], "brain.Event:2");

  // Epoch scalars: train/ has loss and mae, validation/ has val_* without the prefix.
  for (const std::string name : {"loss", "mae"}) {
    std::vector<std::pair<int64_t, double>> want, want_val;
    for (int e = 0; e < 3; ++e) {
      want.emplace_back(e, static_cast<float>(h.history.at(name)[static_cast<size_t>(e)]));
      want_val.emplace_back(e, static_cast<float>(h.history.at("val_" + name)[static_cast<size_t>(e)]));
    }
    EXPECT_EQ(scalars(train, "epoch_" + name), want) << name;
    EXPECT_EQ(scalars(validation, "epoch_" + name), want_val) << name;
  }
  EXPECT_EQ(scalars(train, "epoch_learning_rate"),
            (std::vector<std::pair<int64_t, double>>{{0, 0.05f}, {1, 0.05f}, {2, 0.05f}}));
  EXPECT_TRUE(scalars(train, "epoch_val_loss").empty());

  // Batch scalars every 4 train steps, at the 1-based step count (Keras's _train_counter).
  std::vector<std::pair<int64_t, double>> want_batch;
  for (int64_t s = 4; s <= 18; s += 4)
    want_batch.emplace_back(s, static_cast<float>(batch_logs[static_cast<size_t>(s - 1)].at("loss")));
  EXPECT_EQ(scalars(train, "batch_loss"), want_batch);
  EXPECT_EQ(scalars(train, "batch_mae").size(), 4u);

  // After each validation: evaluation_<metric>_vs_iterations at the train step count.
  EXPECT_EQ(scalars(validation, "evaluation_loss_vs_iterations"),
            (std::vector<std::pair<int64_t, double>>{{6, static_cast<float>(h.history.at("val_loss")[0])},
                                                     {12, static_cast<float>(h.history.at("val_loss")[1])},
                                                     {18, static_cast<float>(h.history.at("val_loss")[2])}}));

  // Histograms at epochs 0 and 2; the last one holds the final weights (one value each).
  std::vector<int64_t> histogram_steps;
  const std::vector<HostTensor> weights = model.get_weights();
  for (const auto& e : train)
    if (e.contains("summary"))
      for (const auto& v : e["summary"])
        if (v.contains("histo")) {
          histogram_steps.push_back(e["step"]);
          if (e["step"] != 2) continue;
          const double w = (v["tag"] == "dense/kernel_0/histogram" ? weights[0] : weights[1]).to_vector<double>()[0];
          EXPECT_TRUE(v["tag"] == "dense/kernel_0/histogram" || v["tag"] == "dense/bias_0/histogram") << v["tag"];
          EXPECT_EQ(v["histo"]["num"], 1.0);
          EXPECT_EQ(v["histo"]["min"], w);
          EXPECT_EQ(v["histo"]["max"], w);
        }
  EXPECT_EQ(histogram_steps, (std::vector<int64_t>{0, 0, 2, 2}));
}

TEST_F(TensorBoardTest, TheGraphIsTheCompiledTrainStepOneNodePerInstruction) {
  Sequential model({Dense(3, {.activation = "relu", .input_shape = {1}}), Dense(1)});
  model.compile({.optimizer = SGD({.learning_rate = 0.01}), .loss = "mse"});
  auto tb = std::make_shared<TensorBoard>((dir_.path() / "logs").string());
  model.fit(line(16, 0.0f), {.epochs = 1, .callbacks = {tb}, .verbose = 0});
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "logs" / "validation"));  // no validation, no files

  const ir::Module* module = model.train_function()->last_executable()->lowered_module();
  ASSERT_NE(module, nullptr);
  const nlohmann::json train = events("train");
  nlohmann::json graph;
  for (const auto& e : train)
    if (e.contains("graph")) graph = e["graph"];
  ASSERT_EQ(graph.size(), module->entry()->instructions().size());
  std::set<std::string> seen;
  std::map<std::string, int> ops;
  for (size_t i = 0; i < graph.size(); ++i) {
    const ir::Instruction& inst = *module->entry()->instructions()[i];
    EXPECT_EQ(graph[i]["op"], std::string(ir::opcode_name(inst.opcode())));
    EXPECT_EQ(graph[i]["input"].size(), inst.operand_count());
    EXPECT_EQ(graph[i]["attr"]["shape"], inst.shape().to_string());
    EXPECT_TRUE(seen.insert(graph[i]["name"]).second) << "duplicate name " << graph[i]["name"];
    ++ops[graph[i]["op"]];
  }
  for (const auto& node : graph)
    for (const auto& input : node["input"]) EXPECT_TRUE(seen.contains(input)) << "reads no node: " << input;
  EXPECT_GT(ops["parameter"], 0);
}

TEST_F(TensorBoardTest, BadOptionsAreValueErrors) {
  EXPECT_THROW(TensorBoard("logs", {.update_freq = int64_t{0}}), ValueError);
  EXPECT_THROW(TensorBoard("logs", {.update_freq = "weekly"}), ValueError);
  EXPECT_THROW(TensorBoard("logs", {.histogram_freq = -1}), ValueError);
  EXPECT_THROW(TensorBoard("logs", {.profile_batch = {3, 2}}), ValueError);
}

TEST_F(TensorBoardTest, ProfileBatchWritesATraceUnderPluginsProfile) {
  Sequential model({Dense(1, {.input_shape = {1}})});
  model.compile({.optimizer = SGD({.learning_rate = 0.01}), .loss = "mse"});
  auto tb = std::make_shared<TensorBoard>((dir_.path() / "logs").string(),
                                          TensorBoardOptions{.write_graph = false, .profile_batch = {1, 1}});
  model.fit(line(16, 0.0f), {.epochs = 1, .callbacks = {tb}, .verbose = 0});
  int traces = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir_.path() / "logs" / "plugins" / "profile"))
    traces += e.path().string().ends_with(".trace.json");
  EXPECT_EQ(traces, 1);
}

}  // namespace
}  // namespace kiln::keras
