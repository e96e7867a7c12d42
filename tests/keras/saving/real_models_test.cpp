// The kinds of Keras files users bring (issue 35), written in Keras's layout by
// tests/fixtures/keras/make_real_model_fixtures.py (h5py, zipfile; run by ctest before this
// suite): models nested in models in tf.keras 2 .h5, Keras 3 legacy .h5 and .keras files,
// None after the batch dimension, ints for bools, MobileNet v1/v2 layers, MaxPooling2D "same"
// with another stride, Bidirectional mul/ave. Each loads and predicts the generator's float64
// numpy outputs within 1e-5. Skipped when /usr/bin/python3 lacks h5py.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "kiln/io/zip_archive.h"
#include "kiln/keras/models/model_layer.h"
#include "kiln/keras/namespaces.h"
#include "kiln/keras/saving/saving.h"
#include "tests/io/python_check.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/kiln/run_kiln.h"

namespace kiln::keras {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

HostTensor read_f32(const std::string& path, const std::vector<int64_t>& dims) {
  HostTensor t(Shape(DType::kF32, dims));
  std::ifstream in(path, std::ios::binary);
  in.read(static_cast<char*>(t.raw_data()), t.byte_size());
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return t;
}

class RealModelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("KILN_KERAS2_FIXTURES");
    dir_ = dir != nullptr ? dir : "";
    if (dir_.empty() || !fs::exists(dir_ + "/real_models.json")) {
      if (!io::testing::python_has("h5py, numpy")) GTEST_SKIP() << "/usr/bin/python3 lacks h5py (apt install python3-h5py)";
      FAIL() << "no fixtures at KILN_KERAS2_FIXTURES='" << dir_
             << "': run through ctest, whose KerasFixtures.GenerateRealModels test writes them";
    }
    std::ifstream in(dir_ + "/real_models.json");
    for (const json& fx : json::parse(in)) manifest_[fx["name"].get<std::string>()] = fx;
  }

  std::string file(const std::string& name) const { return dir_ + "/" + manifest_.at(name)["file"].get<std::string>(); }

  // Every case of the fixture (one input shape each) against numpy's outputs.
  void expect_predictions(Model& model, const std::string& name) {
    for (const json& c : manifest_.at(name)["cases"]) {
      const HostTensor x = read_f32(dir_ + "/" + c["x"].get<std::string>(), c["x_shape"].get<std::vector<int64_t>>());
      const HostTensor want = read_f32(dir_ + "/" + c["y"].get<std::string>(), c["y_shape"].get<std::vector<int64_t>>());
      const HostTensor got = model.predict(x);
      ASSERT_EQ(got.dims(), want.dims()) << name << " on " << x.shape();
      const std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
      for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-5) << name << " on " << x.shape() << " output " << i;
    }
  }

  std::unique_ptr<Model> load_and_check(const std::string& name) {
    std::unique_ptr<Model> model = load_model(file(name), {.compile = false});
    expect_predictions(*model, name);
    return model;
  }

  std::string dir_;
  std::map<std::string, json> manifest_;
};

// Teachable Machine's export: Sequential[Sequential[Functional base], Sequential[head]], the
// base's weights listed trainable first and every BatchNormalization statistic last.
TEST_F(RealModelsTest, NestedModelsLoadFromTfKeras2H5ByWeightName) {
  std::unique_ptr<Model> model = load_and_check("nested_teachable_machine_tf2");
  ASSERT_EQ(model->layers().size(), 2u);
  const auto* outer = dynamic_cast<const ModelLayer*>(model->layers()[0].get());
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->name(), "sequential_1");
  EXPECT_EQ(outer->class_name(), "Sequential");
  const auto* base = dynamic_cast<const ModelLayer*>(outer->model().layers()[0].get());
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(base->name(), "model1");
  EXPECT_EQ(base->class_name(), "Functional");
  // 3x3x3x4 + 3x3x4x1 + 1x1x4x4 kernels, three BatchNormalizations of 4 channels, 4->5->3 head.
  EXPECT_EQ(model->count_params(), 108 + 36 + 16 + 3 * 16 + (20 + 5) + (15 + 3));
  EXPECT_EQ(model->non_trainable_weights().size(), 6u);  // the moving statistics
}

// Keras 3's legacy .h5: weight names are variable paths without ":0", the InputLayer says
// batch_shape, and the frozen base lists its weights layer by layer.
TEST_F(RealModelsTest, FrozenNestedModelLoadsFromKeras3LegacyH5) {
  std::unique_ptr<Model> model = load_and_check("nested_frozen_keras3_legacy");
  EXPECT_FALSE(model->layers()[0]->trainable());
  EXPECT_EQ(model->trainable_weights().size(), 4u);  // the head's kernels and biases only
}

TEST_F(RealModelsTest, PlainKeras3LegacyH5Loads) { load_and_check("keras3_legacy_h5_lstm"); }

TEST_F(RealModelsTest, NestedModelsLoadFromKeras3Archive) {
  std::unique_ptr<Model> model = load_and_check("nested_keras3_archive");
  EXPECT_EQ(model->layers()[0]->class_name(), "Sequential");
}

// keras.applications' transfer-learning recipe: a Functional base called with
// training=False inside a Functional, from tf.keras 2.13's .h5 and Keras 3.9's .keras.
TEST_F(RealModelsTest, FunctionalBaseInsideAFunctionalLoadsFromBothFormats) {
  for (const char* name : {"nested_functional_in_functional_tf2", "nested_functional_in_functional_keras3"}) {
    std::unique_ptr<Model> model = load_and_check(name);
    EXPECT_EQ(model->get_layer("mobilenetv2_1.00_9").class_name(), "Functional") << name;
  }
}

// A nested weight named like none of the model's is refused: by position it would load.
TEST_F(RealModelsTest, NestedWeightWithoutItsNameIsAnErrorNamingIt) {
  const std::string path = dir_ + "/nested_renamed_weight.h5";
  KILN_EXPECT_ERROR(load_model(path, {.compile = false}), IOError, "sequential_1");
  KILN_EXPECT_ERROR(load_model(path, {.compile = false}), IOError, "no weight named like 'model1/bn_Conv1/moving_mean'");
}

// A nested model, frozen or not, survives Kiln's own formats: .h5, .keras and the model directory.
TEST_F(RealModelsTest, NestedModelRoundTripsThroughEveryFormat) {
  for (const char* fixture : {"nested_teachable_machine_tf2", "nested_frozen_keras3_legacy"}) {
    std::unique_ptr<Model> model = load_model(file(fixture), {.compile = false});
    kiln::testing::TempDir dir;
    for (const char* name : {"m.h5", "m.keras", "m_dir"}) {
      const std::string path = (dir.path() / name).string();
      model->save(path);
      std::unique_ptr<Model> back = load_model(path, {.compile = false});
      expect_predictions(*back, fixture);
      EXPECT_EQ(back->layers()[0]->class_name(), "Sequential") << name;
      EXPECT_EQ(back->layers()[0]->trainable(), model->layers()[0]->trainable()) << fixture << " " << name;
      EXPECT_EQ(back->trainable_weights().size(), model->trainable_weights().size()) << fixture << " " << name;
    }
  }
}

// Embedding over [None, None] (in .h5 and .keras), LSTM over [None, None, 6] and a
// convolutional Functional over (None, None, 3) images: built without those sizes, traced
// once per concrete shape (each fixture predicts at two shapes).
TEST_F(RealModelsTest, NoneDimensionsAfterTheBatchTraceEachLength) {
  std::unique_ptr<Model> embedding = load_and_check("none_dims_embedding_lstm");
  EXPECT_EQ(embedding->layers()[0]->built_input_shape(), Dims{kNoneDim});
  EXPECT_NE(embedding->summary_text().find("(None, None, 4)"), std::string::npos) << embedding->summary_text();
  load_and_check("none_dims_lstm_features");
  load_and_check("none_dims_keras3_embedding_lstm");
  std::unique_ptr<Model> conv = load_and_check("none_dims_conv_any_image_size");
  EXPECT_NE(conv->summary_text().find("(None, None, None, 4)"), std::string::npos) << conv->summary_text();
}

// A Dense after a None dimension would need its size: the error names the layer.
TEST_F(RealModelsTest, WeightSizedByANoneDimensionIsAnErrorNamingTheLayer) {
  const std::string config = R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "InputLayer", "config": {"batch_input_shape": [null, null], "name": "in"}},
      {"class_name": "Dense", "config": {"name": "dense_7", "units": 2}}]}})";
  KILN_EXPECT_ERROR(model_from_json(config), Error, "[dense_7] weight 'kernel' would have a size taken from an input "
                    "dimension saved as None");
}

// `kiln inspect` of a .keras file Kiln cannot build (a layer class it lacks inside the nested
// base): the reason, then the layer tree from config.json with the nested models indented and
// each layer's stored variables with their shapes.
TEST_F(RealModelsTest, InspectShowsANestedKerasArchiveKilnCannotLoad) {
  const io::ZipReader zip = io::ZipReader::open(file("nested_keras3_archive"));
  std::string config = zip.read("config.json");
  const std::string from = "\"class_name\": \"ReLU\"", to = "\"class_name\": \"RandomShear\"";
  ASSERT_NE(config.find(from), std::string::npos);
  config.replace(config.find(from), from.size(), to);
  kiln::testing::TempDir dir;
  const std::string path = (dir.path() / "unknown.keras").string();
  io::write_zip_atomically(path, {{"metadata.json", zip.read("metadata.json")}, {"config.json", config},
                                  {"model.weights.h5", zip.read("model.weights.h5")}});
  const auto [out, status] = kiln::testing::run_kiln("inspect " + path);
  ASSERT_EQ(status, 0) << out;
  for (const std::string expected :
       {"keras_version: 3.5.0", "Kiln cannot load it", "layer 'Conv1_relu' is a RandomShear",
        "  sequential_1 (Sequential)\n", "    functional_base (Functional)\n      input_1 (InputLayer)\n",
        "      Conv1 (Conv2D)\n        vars/0 f32[3,3,3,4]\n", "    dense_Dense2 (Dense)\n      vars/0 f32[5,3]\n"})
    EXPECT_NE(out.find(expected), std::string::npos) << "missing '" << expected << "' in\n" << out;
}

TEST_F(RealModelsTest, IntsWhereKerasWritesBoolsAreRead) { load_and_check("int_bools_batch_norm"); }

TEST_F(RealModelsTest, MobileNetV1LayersAndSamePoolingWithAnotherStrideLoad) {
  load_and_check("mobilenet_v1_block_same_pool");
}

TEST_F(RealModelsTest, SeparableConv2DSameWithStrideLoads) { load_and_check("separable_conv2d_same"); }

TEST_F(RealModelsTest, BidirectionalMulAndAveMergeModesLoad) { load_and_check("bidirectional_mul_ave"); }

// A .keras file's hard_sigmoid is Keras 3's relu6(x + 3) / 6 (inputs up to |x| ~ 10 tell it
// from Keras 2's 0.2x + 0.5), and it is written back under that name.
TEST_F(RealModelsTest, Keras3HardSigmoidIsKeras3s) {
  std::unique_ptr<Model> model = load_and_check("keras3_hard_sigmoid");
  kiln::testing::TempDir dir;
  const std::string path = (dir.path() / "again.keras").string();
  model->save(path);
  std::unique_ptr<Model> back = load_model(path, {.compile = false});
  expect_predictions(*back, "keras3_hard_sigmoid");
}

}  // namespace
}  // namespace kiln::keras
