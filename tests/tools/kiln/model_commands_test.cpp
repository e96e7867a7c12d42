// `kiln summary`, `inspect`, `eval` and `convert` run as a user runs them, on models Kiln saved:
// summary prints exactly model.summary()'s table; inspect names the format, version, weights and
// optimizer state; eval prints model.evaluate's numbers; convert keeps predictions bitwise;
// --help and errors are what a user can act on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "kiln/data/readers/npy_reader.h"
#include "kiln/io/hdf5_file.h"
#include "kiln/keras/keras.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/kiln/run_kiln.h"

namespace kiln::keras {
namespace {

using kiln::testing::run_kiln;

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

// A tf.keras 2.9 file nesting a Sequential in a Sequential (as h5py writes it), whose inner
// layer is `inner_class`.
void write_nested_h5(const std::string& path, const std::string& inner_class) {
  io::Hdf5File file = io::Hdf5File::create(path);
  io::Hdf5Group& root = file.root();
  root.write_string_attribute("keras_version", "2.9.0", io::StringKind::kVariableUtf8);
  root.write_string_attribute("backend", "tensorflow", io::StringKind::kVariableUtf8);
  root.write_string_attribute(
      "model_config",
      R"({"class_name": "Sequential", "config": {"name": "outer", "layers": [{"class_name": "Sequential",
          "config": {"name": "inner", "layers": [{"class_name": ")" + inner_class + R"(",
          "config": {"name": "head", "units": 2, "batch_input_shape": [null, 3]}}]}}]}})",
      io::StringKind::kVariableAscii);
  io::Hdf5Group weights = root.create_group("model_weights");
  weights.write_keras_string_list("layer_names", {"inner"});
  io::Hdf5Group inner = weights.create_group("inner");
  inner.write_keras_string_list("weight_names", {"head/kernel:0", "head/bias:0"});
  inner.write_dataset("head/kernel:0", HostTensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  inner.write_dataset("head/bias:0", HostTensor::from_vector<float>({2}, {0.5f, -0.5f}));
  file.flush();
}

// inspect indents a nested model's layers under it, and shows a file Kiln cannot build from
// the file itself: the reason (layer, class, Keras version), the layer tree and the weights.
TEST(KilnCliTest, InspectShowsNestedModelsAndFilesKilnCannotLoad) {
  kiln::testing::TempDir dir;
  write_nested_h5(dir.file("nested.h5"), "Dense");
  const auto [out, status] = run_kiln("inspect " + dir.file("nested.h5"));
  ASSERT_EQ(status, 0) << out;
  for (const std::string expected : {"keras_version: 2.9.0", "  inner (Sequential)\n    head (Dense)\n",
                                     "      head/kernel f32[3,2]", "8 parameters"})
    EXPECT_NE(out.find(expected), std::string::npos) << "missing '" << expected << "' in\n" << out;

  write_nested_h5(dir.file("unknown.h5"), "Frobnicate");
  const auto [bad, bad_status] = run_kiln("inspect " + dir.file("unknown.h5"));
  ASSERT_EQ(bad_status, 0) << bad;
  for (const std::string expected :
       {"Kiln cannot load it", "written by Keras 2.9.0", "layer 'head' (Frobnicate)",
        "  inner (Sequential)\n    head (Frobnicate)\n", "    head/kernel:0 f32[3,2]", "    head/bias:0 f32[2]"})
    EXPECT_NE(bad.find(expected), std::string::npos) << "missing '" << expected << "' in\n" << bad;
}

// Rows of 3 features and 2 targets, not all alike, so every weight matters to the predictions.
std::pair<HostTensor, HostTensor> rows(int64_t n) {
  std::vector<float> x, y;
  for (int64_t i = 0; i < n; ++i) {
    for (int j = 0; j < 3; ++j) x.push_back(static_cast<float>((i * 7 + j * 3) % 11) / 11.0f - 0.4f);
    y.push_back(static_cast<float>(i % 3));
    y.push_back(static_cast<float>(i % 2) - 0.5f);
  }
  return {HostTensor::from_vector<float>({n, 3}, x), HostTensor::from_vector<float>({n, 2}, y)};
}

// `name: value` per log, then one JSON object, each value as %.9g prints it.
std::string expected_eval_output(const Logs& logs) {
  std::string text, json = "{";
  char value[32];
  for (const auto& [name, v] : logs) {
    std::snprintf(value, sizeof value, "%.9g", v);
    text += name + ": " + value + "\n";
    json += std::string(json.size() > 1 ? ", " : "") + "\"" + name + "\": " + value;
  }
  return text + json + "}\n";
}

TEST(KilnCliTest, EvalOnAnNpyPairPrintsWhatModelEvaluateReturns) {
  kiln::testing::TempDir dir;
  auto model = trained_model();
  model->compile({.optimizer = Adam(), .loss = "mse", .metrics = {"mae"}});
  const auto [x, y] = rows(37);  // a last batch of 5 at batch size 8
  data::write_npy(dir.file("x.npy"), x);
  data::write_npy(dir.file("y.npy"), y);
  model->save(dir.file("m.keras"));
  const Logs logs = model->evaluate(x, y, 8, {.verbose = 0});
  ASSERT_EQ(logs.items().size(), 2u);  // loss, mae
  const auto [out, status] =
      run_kiln("eval " + dir.file("m.keras") + " --x " + dir.file("x.npy") + " --y " + dir.file("y.npy") + " --batch-size 8");
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, expected_eval_output(logs));
  // A NaN target makes every log NaN: "nan" in the text, null in the JSON (which has no NaN).
  std::vector<float> nan_y = y.to_vector<float>();
  nan_y[0] = std::nanf("");
  data::write_npy(dir.file("nan_y.npy"), HostTensor::from_vector<float>({37, 2}, nan_y));
  const auto [nan_out, nan_status] =
      run_kiln("eval " + dir.file("m.keras") + " --x " + dir.file("x.npy") + " --y " + dir.file("nan_y.npy"));
  EXPECT_EQ(nan_status, 0) << nan_out;
  EXPECT_EQ(nan_out, "loss: nan\nmae: nan\n{\"loss\": null, \"mae\": null}\n");
}

TEST(KilnCliTest, EvalOnMnistUsesTheTestSplitScaledToTheModelInputShape) {
  auto mnist = testing::load_mnist_subset(1, 10000);
  if (!mnist) GTEST_SKIP() << "MNIST files absent (scripts/fetch_mnist.sh)";
  kiln::testing::TempDir dir;
  Sequential model({Flatten({.input_shape = {28, 28, 1}}), Dense(10)});
  model.compile({.optimizer = SGD(), .loss = SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"}});
  model.save(dir.file("m.h5"));
  const Logs logs = model.evaluate(mnist->x_test.reshape({10000, 28, 28, 1}), mnist->y_test, 32, {.verbose = 0});
  const auto [out, status] = run_kiln("eval " + dir.file("m.h5") + " --mnist");
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, expected_eval_output(logs));
}

TEST(KilnCliTest, EvalOfAMultiOutputModelTakesYPerOutputAndPrintsEachOutputsLossAndMetrics) {
  kiln::testing::TempDir dir;
  KerasTensor in = Input({3});
  KerasTensor h = Dense(4, {.activation = "relu", .name = "trunk"})(in);
  Functional model({in}, {Dense(2, {.name = "reg"})(h), Dense(3, {.name = "cls"})(h)});
  model.compile({.optimizer = Adam(), .losses = {"mse", SparseCategoricalCrossentropy({.from_logits = true})},
                 .metrics_by_output = {{"cls", {"accuracy"}}}, .weighted_metrics_by_output = {{"reg", {"mae"}}}});
  const auto [x, y_reg] = rows(37);
  std::vector<int32_t> labels;
  std::vector<float> weights;
  for (int i = 0; i < 37; ++i) {
    labels.push_back(i % 3);
    weights.push_back(static_cast<float>(i % 4) * 0.5f);
  }
  const HostTensor y_cls = HostTensor::from_vector<int32_t>({37}, labels), w = HostTensor::from_vector<float>({37}, weights);
  for (const auto& [name, t] : std::map<std::string, HostTensor>{{"x", x}, {"reg", y_reg}, {"cls", y_cls}, {"w", w}})
    data::write_npy(dir.file(name + ".npy"), t);
  model.save(dir.file("m.h5"));
  const std::vector<HostTensor> ys{y_reg, y_cls};
  const Logs logs = model.evaluate(x, ys, 8, {.verbose = 0});
  ASSERT_EQ(logs.items().size(), 5u);  // loss, reg_loss, cls_loss, reg_mae, cls_accuracy
  const std::string base = "eval " + dir.file("m.h5") + " --x " + dir.file("x.npy") + " --batch-size 8";
  // By output name in any order, or one file per output in output order.
  for (const std::string& ys_args : {" --y cls=" + dir.file("cls.npy") + " --y reg=" + dir.file("reg.npy"),
                                    " --y " + dir.file("reg.npy") + " --y " + dir.file("cls.npy")}) {
    const auto [out, status] = run_kiln(base + ys_args);
    EXPECT_EQ(status, 0) << out;
    EXPECT_EQ(out, expected_eval_output(logs));
  }
  const Logs weighted = model.evaluate(x, ys, 8, {.verbose = 0, .sample_weight = {.all = w}});
  const auto [out, status] = run_kiln(base + " --y reg=" + dir.file("reg.npy") + " --y cls=" + dir.file("cls.npy") +
                                      " --sample-weight " + dir.file("w.npy"));
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, expected_eval_output(weighted));
  EXPECT_NE(weighted.at("reg_mae"), logs.at("reg_mae"));
  const auto [bad, bad_status] = run_kiln(base + " --y reg=" + dir.file("reg.npy"));
  EXPECT_EQ(bad_status, 1);
  EXPECT_NE(bad.find("has 2 output(s) (reg, cls), and received 1 --y value(s)"), std::string::npos) << bad;
}

TEST(KilnCliTest, EvalErrorsSayWhatIsMissing) {
  kiln::testing::TempDir dir;
  auto model = trained_model();
  model->save(dir.file("m.h5"));
  auto [out, status] = run_kiln("eval " + dir.file("m.h5"));
  EXPECT_EQ(status, 1);
  EXPECT_NE(out.find("--mnist, or as --x x.npy --y y.npy"), std::string::npos) << out;
  std::tie(out, status) = run_kiln("eval " + dir.file("m.h5") + " --x " + dir.file("missing.npy") + " --y " + dir.file("missing.npy"));
  EXPECT_EQ(status, 1);
  EXPECT_NE(out.find(dir.file("missing.npy")), std::string::npos) << out;
  std::tie(out, status) = run_kiln("eval " + dir.file("m.h5") + " --mnist --batch-size 3x");
  EXPECT_EQ(status, 1);
  EXPECT_NE(out.find("--batch-size expects a positive integer, received '3x'"), std::string::npos) << out;
  std::tie(out, status) = run_kiln("eval " + dir.file("m.h5") + " --mnits");
  EXPECT_EQ(status, 1);
  EXPECT_NE(out.find("unknown option --mnits"), std::string::npos) << out;
  model->save(dir.file("bare.h5"), {.include_optimizer = false});
  std::tie(out, status) = run_kiln("eval " + dir.file("bare.h5") + " --mnist");
  EXPECT_EQ(status, 1);
  EXPECT_NE(out.find("holds no compile arguments"), std::string::npos) << out;
  // --image-folder: one data source only, and a model that takes images.
  std::tie(out, status) = run_kiln("eval " + dir.file("m.h5") + " --mnist --image-folder " + dir.path().string());
  EXPECT_EQ(status, 1);
  EXPECT_NE(out.find("or as --image-folder dir"), std::string::npos) << out;
  std::tie(out, status) = run_kiln("eval " + dir.file("m.h5") + " --image-folder " + dir.path().string());
  EXPECT_EQ(status, 1);
  EXPECT_NE(out.find("takes inputs of shape f32[3]; --image-folder gives images (height, width, channels)"),
            std::string::npos) << out;
}

// Predictions of the model at `path` on `x`, as raw bytes.
std::vector<float> predictions(const std::string& path, const HostTensor& x) {
  return load_model(path, {.compile = false})->predict(x).to_vector<float>();
}

TEST(KilnCliTest, ConvertRoundTripsEveryFormatKeepingPredictionsBitwise) {
  kiln::testing::TempDir dir;
  auto model = trained_model();
  const HostTensor x = rows(9).first;
  const std::vector<float> expected = model->predict(x).to_vector<float>();
  model->save(dir.file("a.h5"));
  // .h5 -> .keras -> directory -> .safetensors (+ architecture) -> .h5, then back the other way.
  const std::vector<std::pair<std::string, std::string>> steps = {
      {"a.h5", "b.keras"}, {"b.keras", "c_dir"}, {"c_dir", "d.safetensors"}, {"d.safetensors", "e.h5"},
      {"e.h5", "f_dir"},   {"c_dir", "g.keras"}, {"g.keras", "h.h5"}};
  for (const auto& [from, to] : steps) {
    const std::string config = from.ends_with(".safetensors") ? " --config " + dir.file("a.h5") : "";
    const auto [out, status] = run_kiln("convert " + dir.file(from) + " " + dir.file(to) + config);
    ASSERT_EQ(status, 0) << from << " -> " << to << ": " << out;
    if (to.ends_with(".safetensors")) {
      auto fresh = model_from_json(model->to_json());  // freshly initialized weights
      ASSERT_NE(fresh->predict(x).to_vector<float>(), expected);
      fresh->load_weights(dir.file(to));
      EXPECT_EQ(fresh->predict(x).to_vector<float>(), expected) << to;
    } else {
      EXPECT_EQ(predictions(dir.file(to), x), expected) << to;
    }
  }
  // The optimizer state travels with the model formats (Adam's moments after one fit).
  auto a = load_model(dir.file("a.h5")), h = load_model(dir.file("h.h5"));
  ASSERT_EQ(a->optimizer()->variables().size(), h->optimizer()->variables().size());
  for (size_t i = 0; i < a->optimizer()->variables().size(); ++i)
    EXPECT_EQ(a->optimizer()->variables()[i].storage().to_vector<float>(),
              h->optimizer()->variables()[i].storage().to_vector<float>()) << i;
}

TEST(KilnCliTest, ConvertFromSafetensorsTakesTheArchitectureFromConfigOrAJsonFile) {
  kiln::testing::TempDir dir;
  auto model = trained_model();
  const HostTensor x = rows(4).first;
  model->save_weights(dir.file("w.safetensors"));
  std::ofstream(dir.file("arch.json")) << model->to_json();
  auto [out, status] = run_kiln("convert " + dir.file("w.safetensors") + " " + dir.file("m.keras"));
  EXPECT_EQ(status, 1);
  EXPECT_NE(out.find("holds weights only"), std::string::npos) << out;
  EXPECT_NE(out.find("--config"), std::string::npos) << out;
  std::tie(out, status) =
      run_kiln("convert " + dir.file("w.safetensors") + " " + dir.file("m.keras") + " --config " + dir.file("arch.json"));
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("not compiled"), std::string::npos) << out;
  EXPECT_EQ(predictions(dir.file("m.keras"), x), model->predict(x).to_vector<float>());
}

TEST(KilnCliTest, HelpForEachCommandAndErrorsNameTheFile) {
  for (const std::string command : {"summary", "inspect", "devices", "mnist", "eval", "convert", "report"}) {
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
