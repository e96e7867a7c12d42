// Save then load gives identical predictions and identical optimizer state, for every model
// case (layer family) and optimizer of saving_testing.h, in each whole-model format (.h5,
// Keras 3's .keras and the directory format) and for weights-only files (.h5, Keras 3's
// .weights.h5 and .safetensors).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "kiln/io/file_reader.h"
#include "kiln/keras/saving/saving.h"
#include "tests/keras/saving/saving_testing.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

using namespace testing;

struct RoundTrip {
  ModelCase model;
  OptimizerCase optimizer;
  std::string format;  // "h5", "keras" or "dir"
};

std::vector<RoundTrip> round_trips() {
  std::vector<RoundTrip> out;
  for (const char* format : {"h5", "keras", "dir"}) {
    for (const ModelCase& m : model_cases()) out.push_back({m, optimizer_cases()[0], format});
    for (size_t i = 1; i < optimizer_cases().size(); ++i)
      if (optimizer_cases()[i].keras3 || std::string(format) != "keras")
        out.push_back({model_cases()[0], optimizer_cases()[i], format});
  }
  return out;
}

class RoundTripTest : public ::testing::TestWithParam<RoundTrip> {
 protected:
  kiln::testing::TempDir dir_;
};

TEST_P(RoundTripTest, LoadedModelPredictsAndTrainsOnIdentically) {
  const RoundTrip& p = GetParam();
  auto model = build_model(p.model);
  compile_model(*model, p.optimizer.make());
  train(*model, p.model.input, 3);
  const std::string path = dir_.file(p.format == "dir" ? "model_dir" : "model." + p.format);
  model->save(path);

  std::unique_ptr<Model> loaded = load_model(path);
  ASSERT_TRUE(loaded->is_compiled());
  EXPECT_EQ(loaded->to_json(), model->to_json());
  EXPECT_EQ(loaded->optimizer()->class_name(), model->optimizer()->class_name());
  EXPECT_EQ(loaded->optimizer()->get_config(), model->optimizer()->get_config());
  expect_same_tensors(loaded->get_weights(), model->get_weights(), "weight");
  expect_same_tensors(values_of(loaded->optimizer()->variables()), values_of(model->optimizer()->variables()),
                      "optimizer variable");
  auto [x, y] = sample_data(p.model.input, 8, /*phase=*/1.0);
  expect_same_tensors({loaded->predict(x)}, {model->predict(x)}, "prediction");

  if (p.model.stochastic) return;  // RNG counters are checkpoint state, not in these files
  train(*model, p.model.input, 2, /*phase=*/2.0);
  train(*loaded, p.model.input, 2, /*phase=*/2.0);
  expect_same_tensors(loaded->get_weights(), model->get_weights(), "weight after two more steps");
  expect_same_tensors(values_of(loaded->optimizer()->variables()), values_of(model->optimizer()->variables()),
                      "optimizer variable after two more steps");
}

INSTANTIATE_TEST_SUITE_P(EveryLayerAndOptimizer, RoundTripTest, ::testing::ValuesIn(round_trips()),
                         [](const ::testing::TestParamInfo<RoundTrip>& p) {
                           return p.param.model.name + "_" + p.param.optimizer.name + "_" + p.param.format;
                         });

class WeightsRoundTripTest : public ::testing::TestWithParam<ModelCase> {
 protected:
  kiln::testing::TempDir dir_;
};

TEST_P(WeightsRoundTripTest, SaveWeightsThenLoadWeightsInEachFormat) {
  const ModelCase& c = GetParam();
  auto model = build_model(c);
  compile_model(*model, "adam");
  train(*model, c.input, 2);
  auto [x, y] = sample_data(c.input, 8, /*phase=*/1.0);
  for (const char* file : {"w.h5", "w.weights.h5", "w.safetensors"}) {
    SCOPED_TRACE(file);
    model->save_weights(dir_.file(file));
    auto fresh = build_model(c);  // same names, fresh initial values
    fresh->load_weights(dir_.file(file));
    expect_same_tensors(fresh->get_weights(), model->get_weights(), "weight");
    expect_same_tensors({fresh->predict(x)}, {model->predict(x)}, "prediction");
  }
}

INSTANTIATE_TEST_SUITE_P(EveryLayer, WeightsRoundTripTest, ::testing::ValuesIn(model_cases()),
                         [](const ::testing::TestParamInfo<ModelCase>& p) { return p.param.name; });

TEST(LoadModelTest, UncompiledModelRoundTripsWithoutTrainingConfig) {
  kiln::testing::TempDir dir;
  auto model = build_model(model_cases()[0]);
  for (const std::string& path : {dir.file("m.h5"), dir.file("m.keras"), dir.file("m_dir")}) {
    model->save(path);
    std::unique_ptr<Model> loaded = load_model(path);
    EXPECT_FALSE(loaded->is_compiled()) << path;
    expect_same_tensors(loaded->get_weights(), model->get_weights(), path);
  }
}

TEST(LoadModelTest, CatalogueLossesAndTheirOptionsRoundTrip) {
  // The training_config names a loss by class and config; each format rebuilds it.
  kiln::testing::TempDir dir;
  auto model = build_model(model_cases()[0]);
  for (LossHandle loss : {LossHandle(Huber({.delta = 0.3, .name = "h"})), LossHandle("logcosh"),
                          LossHandle(CategoricalCrossentropy({.from_logits = true, .label_smoothing = 0.1}))}) {
    model->compile({.optimizer = "adam", .loss = loss});
    for (const std::string& path : {dir.file("m.h5"), dir.file("m.keras"), dir.file("m_dir")}) {
      model->save(path);
      const LossHandle back = load_model(path)->compile_options().loss;  // a copy: the model goes
      EXPECT_EQ(back->class_name(), loss->class_name()) << path;
      EXPECT_EQ(back->get_config(), loss->get_config()) << path;
    }
  }
}

TEST(LoadModelTest, CompileFalseSkipsTheOptimizer) {
  kiln::testing::TempDir dir;
  auto model = build_model(model_cases()[0]);
  compile_model(*model, "adam");
  train(*model, model_cases()[0].input, 1);
  model->save(dir.file("m.h5"));
  EXPECT_FALSE(load_model(dir.file("m.h5"), {.compile = false})->is_compiled());
  EXPECT_TRUE(load_model(dir.file("m.h5"))->is_compiled());
}

// Kilns before data directories wrote version 1: the tensor files beside model.json. Such a
// directory loads, and saving over it removes those files once they are two saves old.
TEST(LoadModelTest, DirectoriesOfEarlierKilnsStillLoad) {
  namespace fs = std::filesystem;
  kiln::testing::TempDir dir;
  auto model = build_model(model_cases()[0]);
  compile_model(*model, "adam");
  train(*model, model_cases()[0].input, 1);
  const fs::path d = dir.file("m_dir");
  model->save(d.string());
  std::string toc = io::read_file((d / "model.json").string());
  const std::regex data_dir(R"re("data_dir": "(data-[^"]+)",\s*)re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(toc, m, data_dir)) << toc;
  for (const char* f : {"weights.safetensors", "optimizer.safetensors"}) fs::rename(d / m[1].str() / f, d / f);
  fs::remove(d / m[1].str());
  // Version 1: no data directory, and (as version 2) no checksum of model.json itself.
  toc = std::regex_replace(std::regex_replace(toc, data_dir, ""), std::regex(R"("version": 3)"), R"("version": 1)");
  toc = std::regex_replace(toc, std::regex("\n  \"crc32c\": [0-9]+,"), "");
  std::ofstream(d / "model.json") << toc;
  std::unique_ptr<Model> loaded = load_model(d.string());
  expect_same_tensors(loaded->get_weights(), model->get_weights(), "weight");
  expect_same_tensors(values_of(loaded->optimizer()->variables()), values_of(model->optimizer()->variables()), "slot");
  model->save(d.string());
  EXPECT_TRUE(fs::exists(d / "weights.safetensors")) << "kept while it is the previous save";
  model->save(d.string());
  EXPECT_FALSE(fs::exists(d / "weights.safetensors"));
  EXPECT_FALSE(fs::exists(d / "optimizer.safetensors"));
}

}  // namespace
}  // namespace kiln::keras
