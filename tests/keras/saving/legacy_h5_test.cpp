// Keras 2.0-2.15 .h5 files as each release wrote them (tests/fixtures/keras/
// make_keras2_fixtures.py, run by ctest into the build tree before this suite): every fixture
// loads with load_model and predicts the generator's numpy outputs within 1e-5, its optimizer
// state is restored or skipped with a one-line warning, and what Kiln cannot read is named
// with the layer, the key and the Keras version. Skipped when /usr/bin/python3 lacks h5py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "kiln/io/hdf5_file.h"
#include "kiln/keras/layers/dropout.h"
#include "kiln/keras/namespaces.h"
#include "kiln/keras/saving/saving.h"
#include "kiln/keras/saving/training_config.h"
#include "tests/io/python_check.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/raw_tensor_file.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testing::read_raw_tensor;

// The fixtures the generator writes, by name (its FIXTURES list).
const char* const kFixtures[] = {
    "keras-2.0.8-bare-list-rmsprop",          "keras-2.0.8-theano-channels-first-adadelta",
    "keras-2.1.6-bare-list-conv-adam",
    "keras-2.2.4-channels-first-sgd",         "keras-2.2.4-model-functional-adam",
    "keras-2.3.1-build-input-shape-adadelta",
    "keras-2.4.0-functional-adam-v2",         "keras-2.6.0-adam-state-mismatch",
    "keras-2.10.0-no-optimizer-weights",      "keras-2.13.1-module-registered-name-rmsprop",
    "keras-2.15.0-input-layer-adam-new",      "keras-2.2.4-nadam-schedule-decay",
    "keras-2.3.1-nadam-m-schedule",           "keras-2.9.0-nadam-momentum-cache",
    "keras-2.12.0-nadam-new",
};

class KerasLegacyH5Test : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("KILN_KERAS2_FIXTURES");
    dir_ = dir != nullptr ? dir : "";
    if (dir_.empty() || !fs::exists(dir_ + "/manifest.json")) {
      if (!io::testing::python_has("h5py, numpy")) GTEST_SKIP() << "/usr/bin/python3 lacks h5py (apt install python3-h5py)";
      FAIL() << "no fixtures at KILN_KERAS2_FIXTURES='" << dir_
             << "': run through ctest, whose KerasFixtures.Generate test writes them";
    }
    std::ifstream in(dir_ + "/manifest.json");
    for (const json& fx : json::parse(in)) manifest_[fx["name"].get<std::string>()] = fx;
  }

  std::string path(const std::string& file) const { return dir_ + "/" + file; }

  // Predictions on the fixture's inputs against the generator's numpy outputs.
  void expect_predictions(Model& model, const json& fx) {
    const std::string name = fx["name"];
    const HostTensor x = read_raw_tensor(path(name + ".x.bin"), fx["x_shape"].get<std::vector<int64_t>>());
    const HostTensor want = read_raw_tensor(path(name + ".y.bin"), fx["y_shape"].get<std::vector<int64_t>>());
    const HostTensor got = model.predict(x);
    ASSERT_EQ(got.dims(), want.dims()) << name;
    const std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
    for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-5) << name << " output " << i;
  }

  std::string dir_;
  std::map<std::string, json> manifest_;
};

double slot_sum(const Optimizer& optimizer) {
  const std::vector<Variable> vars = optimizer.variables();
  double sum = 0;
  for (size_t i = 2; i < vars.size(); ++i)
    for (float v : vars[i].storage().astype(DType::kF32).to_vector<float>()) sum += v;
  return sum;
}

bool kiln_has_optimizer(const std::string& cls) {
  try {
    optimizer_from_config(cls, "{}");
    return true;
  } catch (const ConfigError&) {
    return false;
  }
}

// Verify that every fixture loads with load_model, predicts numpy's outputs, and that its
// optimizer state is restored (iterations and every slot value) or skipped with a warning.
TEST_F(KerasLegacyH5Test, EveryFixtureLoadsPredictsAndRestoresOrSkipsOptimizerState) {
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(manifest_.count(name)) << "the generator wrote no " << name;
    const json& fx = manifest_[name];
    const std::string file = path(fx["file"]);
    const std::string optimizer = fx["optimizer"];
    if (!kiln_has_optimizer(optimizer)) {
      // Until Kiln has the optimizer, compile fails naming it and the version; the model loads.
      KILN_EXPECT_ERROR(load_model(file), IOError, "'" + optimizer + "'");
      KILN_EXPECT_ERROR(load_model(file), IOError, "written by Keras " + fx["keras_version"].get<std::string>());
      std::unique_ptr<Model> model = load_model(file, {.compile = false});
      expect_predictions(*model, fx);
      continue;
    }
    ::testing::internal::CaptureStderr();
    std::unique_ptr<Model> model = load_model(file);
    const std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(model->is_compiled());
    EXPECT_EQ(model->optimizer()->class_name(), optimizer);
    expect_predictions(*model, fx);
    const std::string expect = fx["expect"];
    const int64_t iterations = model->optimizer()->iterations().storage().astype(DType::kI64).to_vector<int64_t>()[0];
    if (expect == "warning") {
      EXPECT_NE(err.find(file), std::string::npos) << err;
      EXPECT_NE(err.find("skipped the saved optimizer state"), std::string::npos) << err;
      EXPECT_NE(err.find("written by Keras " + fx["keras_version"].get<std::string>()), std::string::npos) << err;
      EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << "one line: " << err;
      EXPECT_EQ(iterations, 0);
      EXPECT_EQ(slot_sum(*model->optimizer()), 0.0);
    } else {
      EXPECT_EQ(err.find("optimizer state"), std::string::npos) << err;
      EXPECT_EQ(iterations, fx["iterations"].get<int64_t>());
      const double want = fx["slot_sum"];
      EXPECT_NEAR(slot_sum(*model->optimizer()), want, 1e-5 * std::max(1.0, std::abs(want)));
    }
  }
}

// Verify that the weights of a restored model keep training: one step after loading moves
// the loss (a fixture with a regularizer and a constraint exercises both in the step).
TEST_F(KerasLegacyH5Test, RestoredModelTrainsWithItsRegularizerAndConstraint) {
  const json& fx = manifest_["keras-2.1.6-bare-list-conv-adam"];
  std::unique_ptr<Model> model = load_model(path(fx["file"]));
  const HostTensor x = read_raw_tensor(path(fx["name"].get<std::string>() + ".x.bin"), fx["x_shape"].get<std::vector<int64_t>>());
  HostTensor y(Shape(DType::kF32, {3, 3}));
  auto yv = y.data<float>();
  for (size_t i = 0; i < yv.size(); ++i) yv[i] = i % 4 == 0 ? 1.0f : 0.0f;
  const Variable kernel = model->layers().back()->weights()[0];
  model->fit(x, y, {.batch_size = 3, .epochs = 1, .verbose = 0});
  EXPECT_EQ(model->optimizer()->iterations().storage().astype(DType::kI64).to_vector<int64_t>()[0], 38);
  // MaxNorm(3, axis=0): no column of the kernel is longer than 3 after the step.
  const HostTensor k = kernel.storage();
  const int64_t rows = k.dims()[0], cols = k.dims()[1];
  const std::vector<float> kv = k.to_vector<float>();
  for (int64_t c = 0; c < cols; ++c) {
    double norm = 0;
    for (int64_t r = 0; r < rows; ++r) norm += double(kv[r * cols + c]) * kv[r * cols + c];
    EXPECT_LE(std::sqrt(norm), 3.0 + 1e-5) << "column " << c;
  }
}

// Verify that Nadam's restored state (m, v, and the momentum-schedule product: the saved
// m_schedule / momentum_cache, or where Keras 2.0-2.2 and tf.keras 2.11-2.15's new Nadam did not
// save it, the product over the saved iterations) continues training as the uninterrupted run
// would: one more step equals the generator's numpy step of Keras's update.
TEST_F(KerasLegacyH5Test, NadamContinuesWithTheMomentumScheduleProduct) {
  for (const char* name : {"keras-2.2.4-nadam-schedule-decay", "keras-2.3.1-nadam-m-schedule",
                           "keras-2.9.0-nadam-momentum-cache", "keras-2.12.0-nadam-new"}) {
    SCOPED_TRACE(name);
    const json& fx = manifest_[name];
    ASSERT_TRUE(fx.contains("next_step"));
    std::unique_ptr<Model> model = load_model(path(fx["file"]));
    ASSERT_TRUE(dynamic_cast<const Nadam*>(model->optimizer()));
    const bool legacy = fx["keras_version"] != "2.12.0";  // 2.11+'s own Nadam has the 0.96^t schedule
    EXPECT_EQ(dynamic_cast<const Nadam&>(*model->optimizer()).schedule_decay(),
              legacy ? std::optional<double>(0.004) : std::nullopt);
    const json& step = fx["next_step"];
    const HostTensor x = read_raw_tensor(path(std::string(name) + ".x.bin"), fx["x_shape"].get<std::vector<int64_t>>());
    const HostTensor y = read_raw_tensor(path(std::string(name) + ".step_y.bin"), step["y_shape"].get<std::vector<int64_t>>());
    model->fit(x, y, {.batch_size = 3, .epochs = 1, .shuffle = false, .verbose = 0});
    const std::vector<HostTensor> weights = model->get_weights();
    ASSERT_EQ(weights.size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      const std::vector<double> got = weights[k].to_vector<double>();
      const std::vector<double> want = step[k == 0 ? "kernel" : "bias"].get<std::vector<double>>();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-6) << (k == 0 ? "kernel " : "bias ") << i;
    }
    EXPECT_EQ(model->optimizer()->iterations().storage().astype(DType::kI64).to_vector<int64_t>()[0],
              fx["iterations"].get<int64_t>() + 1);
  }
}

// Verify that a node's training kwarg (Keras's dropout(x, training=False), in the 2.4.0
// fixture) pins the call's mode: the Dropout stays off while the model trains, and the
// kwarg is written back by to_json.
TEST_F(KerasLegacyH5Test, TrainingCallArgumentPinsTheMode) {
  const json& fx = manifest_["keras-2.4.0-functional-adam-v2"];
  std::unique_ptr<Model> model = load_model(path(fx["file"]));
  EXPECT_NE(model->to_json().find("\"training\":false"), std::string::npos);
  Dropout dropout(0.5);
  const Tensor x(HostTensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(dropout({x}, /*training=*/true, {{"training", false}}).to_vector<float>(), x.to_vector<float>());
}

// Verify that save_weights + to_json() (a weights-only .h5 and a JSON architecture) loads
// through model_from_json and load_weights, and that load_model says what the file is.
TEST_F(KerasLegacyH5Test, WeightsOnlyFileLoadsThroughModelFromJson) {
  const json& fx = manifest_["keras-2.4.0-weights-only"];
  std::ifstream in(path(fx["json"]));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::unique_ptr<Model> model = models::model_from_json(text);
  model->load_weights(path(fx["file"]));
  expect_predictions(*model, fx);
  KILN_EXPECT_ERROR(load_model(path(fx["file"])), IOError, "weights only (save_weights)");
  KILN_EXPECT_ERROR(saving::read_model_config(path(fx["file"])), IOError, "model_from_json");
}

// Verify that read_model_config returns the file's model_config, which model_from_config
// builds (the bare list of Keras 2.0, the Functional of 2.4).
TEST_F(KerasLegacyH5Test, ReadModelConfigFeedsModelFromConfig) {
  for (const char* name : {"keras-2.0.8-bare-list-rmsprop", "keras-2.4.0-functional-adam-v2"}) {
    const std::string config = saving::read_model_config(path(manifest_[name]["file"]));
    EXPECT_EQ(json::parse(config)["class_name"], std::string(name).find("functional") != std::string::npos
                                                     ? "Functional" : "Sequential");
    std::unique_ptr<Model> model = models::model_from_config(config);
    model->load_weights(path(manifest_[name]["file"]));
    expect_predictions(*model, manifest_[name]);
  }
}

// Writes `config` as the model_config of a copy of fixture `name`; returns the copy's path.
std::string with_model_config(const std::string& src, const std::string& dst, const std::string& config) {
  fs::copy_file(src, dst, fs::copy_options::overwrite_existing);
  io::Hdf5File f = io::Hdf5File::open(dst, /*writable=*/true);
  f.root().write_string_attribute("model_config", config, io::StringKind::kVariableAscii);
  return dst;
}

// Verify that a layer class Kiln does not know is named with the layer, the Keras version
// and what to do, and that custom_objects builds it.
TEST_F(KerasLegacyH5Test, UnknownLayerIsNamedAndCustomObjectsBuildIt) {
  kiln::testing::TempDir tmp;
  const std::string src = path(manifest_["keras-2.0.8-bare-list-rmsprop"]["file"]);
  std::string config = saving::read_model_config(src);
  config.replace(config.find("\"Dropout\""), 9, "\"AlphaDropout\"");
  const std::string file = with_model_config(src, tmp.file("alpha.h5"), config);
  try {
    load_model(file);
    ADD_FAILURE() << "expected an IOError";
  } catch (const IOError& err) {
    const std::string what = err.what();
    for (const char* part : {"alpha.h5", "written by Keras 2.0.8", "layer 'dropout_1'", "'AlphaDropout'", "custom_objects"})
      EXPECT_NE(what.find(part), std::string::npos) << part << " not in: " << what;
    EXPECT_EQ(what.find("json.exception"), std::string::npos) << what;
  }
  const LoadOptions options{.custom_objects = {{"AlphaDropout", [](const std::string& c) {
                              return LayerHandle(Dropout::from_config(c));
                            }}}};
  std::unique_ptr<Model> model = load_model(file, options);
  expect_predictions(*model, manifest_["keras-2.0.8-bare-list-rmsprop"]);
}

// Verify that config keys and objects Kiln does not build are named (layer, key, version),
// and that malformed JSON never surfaces as a raw JSON-library message.
// tests/fixtures/keras/make_multi_output_fixture.py: a tf.keras 2.15 model with two outputs,
// compiled with dicts of losses, loss weights and metrics by output name. It loads with both
// outputs, predicts numpy's values, and evaluates to the losses and metrics Keras logs.
TEST_F(KerasLegacyH5Test, MultiOutputModelLoadsWithItsLossesByOutputName) {
  const std::string name = "keras-2.15.0-multi-output";
  std::ifstream in(path(name + ".json"));
  ASSERT_TRUE(in.good()) << "the generator wrote no " << name;
  const json fx = json::parse(in);
  const int64_t rows = fx["rows"];
  const HostTensor x = read_raw_tensor(path(name + ".x.bin"), {rows, fx["inputs"].get<int64_t>()});
  const HostTensor ya = read_raw_tensor(path(name + ".ya.bin"), {rows, fx["a_units"].get<int64_t>()});
  const HostTensor yb = read_raw_tensor(path(name + ".yb.bin"), {rows}, DType::kI32);
  std::unique_ptr<Model> model = load_model(path(name + ".h5"));
  ASSERT_TRUE(model->is_compiled());
  EXPECT_EQ(model->output_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(model->compile_options().loss_weight_by_output, (std::map<std::string, double>{{"a", 0.5}, {"b", 2.0}}));
  const std::vector<HostTensor> p = model->predict_outputs(x);
  const HostTensor want[] = {read_raw_tensor(path(name + ".pa.bin"), {rows, fx["a_units"].get<int64_t>()}),
                             read_raw_tensor(path(name + ".pb.bin"), {rows, fx["b_units"].get<int64_t>()})};
  for (size_t o = 0; o < 2; ++o) {
    const std::vector<float> g = p[o].to_vector<float>(), w = want[o].to_vector<float>();
    ASSERT_EQ(g.size(), w.size());
    for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-5) << "output " << o << " element " << i;
  }
  const Logs logs = model->evaluate(x, {ya, yb}, rows, {.verbose = 0});
  for (const auto& [key, value] : fx["logs"].items()) EXPECT_NEAR(logs.at(key), value.get<double>(), 1e-5) << key;
  EXPECT_EQ(logs.items().size(), fx["logs"].size());
}

TEST_F(KerasLegacyH5Test, UnknownConfigKeysAreNamedWithTheKerasVersion) {
  kiln::testing::TempDir tmp;
  const std::string src = path(manifest_["keras-2.0.8-bare-list-rmsprop"]["file"]);
  const std::string config = saving::read_model_config(src);
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string c = config;
    const size_t at = c.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return with_model_config(src, tmp.file("edited.h5"), c.replace(at, from.size(), to));
  };
  // Dense's activity_regularizer loads (Kiln builds it); other layers' would be named.
  EXPECT_EQ(load_model(edited("\"activity_regularizer\": null",
                              "\"activity_regularizer\": {\"class_name\": \"L1L2\", \"config\": {\"l1\": 0.1}}"))
                ->get_layer("dense_1")
                .activity_regularizer()
                ->l1,
            0.1);
  KILN_EXPECT_ERROR(load_model(edited("\"kernel_regularizer\": null",
                                      "\"kernel_regularizer\": {\"class_name\": \"OrthogonalRegularizer\"}")),
                    IOError, "unknown regularizer class 'OrthogonalRegularizer'");
  KILN_EXPECT_ERROR(load_model(edited("\"distribution\": \"uniform\"", "\"distribution\": \"cauchy\"")), IOError,
                    "layer 'dense_1' (Dense): [initializers] VarianceScaling: unknown distribution 'cauchy'");
  KILN_EXPECT_ERROR(load_model(edited("\"seed\": null}", "\"seed\": null, \"gain\": 2.0}")), IOError,
                    "VarianceScaling config has an unexpected key 'gain'");
  // A key no Keras writes for the class is an error naming the file, the layer and the key, as
  // Keras's from_config raises on it; never a default (issue 33).
  const std::string unknown = edited("\"units\":", "\"unitz\": 3, \"units\":");
  KILN_EXPECT_ERROR(load_model(unknown), IOError,
                    "edited.h5] (written by Keras 2.0.8) model_config: layer 'dense_1' (Dense): [dense_1] Dense config "
                    "has an unexpected key 'unitz' (= 3)");
  // A key Keras writes that Kiln does not build loads at Keras's default only.
  KILN_EXPECT_ERROR(load_model(edited("\"use_bias\": true", "\"use_bias\": true, \"lora_rank\": 4")), IOError,
                    "layer 'dense_1' (Dense): [dense_1] config key 'lora_rank' = 4 is not supported: Dense loads with "
                    "lora_rank=null only");
  EXPECT_NO_THROW(load_model(edited("\"use_bias\": true", "\"use_bias\": true, \"lora_rank\": null")));
  KILN_EXPECT_ERROR(load_model(edited("\"config\": [", "\"config\": {")), IOError,
                    "(written by Keras 2.0.8) model_config is malformed: not valid JSON");
}

}  // namespace
}  // namespace kiln::keras
