// A text classifier whose first layer is TextVectorization: the host layers run on each batch
// before the compiled step in fit and predict, and the model saves and loads in .h5 (the
// vocabulary in the config) and .keras (the vocabulary in the archive's assets).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kiln/io/zip_archive.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::keras {
namespace {

// 64 short reviews: positive ones hold "good" or "great", negative ones "bad" or "awful",
// among shared filler words; labels 1 and 0.
std::pair<HostTensor, HostTensor> reviews() {
  const std::vector<std::string> filler = {"the movie", "this film", "a plot", "the acting", "it was", "so"};
  std::vector<std::string> text;
  std::vector<float> label;
  for (int i = 0; i < 64; ++i) {
    const bool positive = i % 2 == 0;
    const std::string word = positive ? (i % 4 == 0 ? "good" : "Great!") : (i % 4 == 1 ? "bad" : "AWFUL.");
    text.push_back(filler[static_cast<size_t>(i) % filler.size()] + " " + word + " " + filler[static_cast<size_t>(i / 3) % filler.size()]);
    label.push_back(positive ? 1.0f : 0.0f);
  }
  return {HostTensor::from_vector<std::string>({64, 1}, text), HostTensor::from_vector<float>({64, 1}, label)};
}

Sequential classifier(const HostTensor& texts) {
  TextVectorization vectorize({.max_tokens = 32, .output_sequence_length = 8});
  vectorize.adapt(texts);
  Sequential model({InputLayer({.shape = {1}}), vectorize, Embedding(32, 8), GlobalMaxPooling1D(),
                    Dense(1, {.activation = "sigmoid"})});
  model.compile({.optimizer = Adam({.learning_rate = 0.05}), .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  return model;
}

TEST(TextModelTest, FitsATextClassifierThroughItsHostLayers) {
  const auto [x, y] = reviews();
  Sequential model = classifier(x);
  EXPECT_EQ(model.layers()[0]->compute_output_shape({1}), (Dims{8}));  // TextVectorization's (None, 8)
  const History h = model.fit(x, y, {.batch_size = 16, .epochs = 15, .seed = 1, .verbose = 0});
  EXPECT_GT(h.history.at("accuracy").back(), 0.95);
  const HostTensor p = model.predict(HostTensor::from_vector<std::string>({2, 1}, {"a great movie", "an awful plot"}));
  EXPECT_GT(p.to_vector<float>()[0], 0.5f);
  EXPECT_LT(p.to_vector<float>()[1], 0.5f);
  // A Dataset of string batches works the same way.
  const Logs logs = model.evaluate(data::Dataset::from_tensor_slices(x, y).batch(32), {.verbose = 0});
  EXPECT_GT(logs.at("accuracy"), 0.95);
}

TEST(TextModelTest, SavesTheVocabularyInBothFormatsWithIdenticalOutputs) {
  const auto [x, y] = reviews();
  Sequential model = classifier(x);
  model.fit(x, y, {.batch_size = 16, .epochs = 2, .seed = 1, .verbose = 0});
  const HostTensor probe = HostTensor::from_vector<std::string>({3, 1}, {"good film", "awful acting", "unseen words"});
  const std::vector<float> want = model.predict(probe).to_vector<float>();
  const auto& vectorize = dynamic_cast<const TextVectorization&>(*model.layers()[0]);
  kiln::testing::TempDir dir;
  for (const char* file : {"m.h5", "m.keras"}) {
    SCOPED_TRACE(file);
    model.save(dir.file(file));
    std::unique_ptr<Model> loaded = load_model(dir.file(file));
    EXPECT_EQ(loaded->predict(probe).to_vector<float>(), want);
    const auto& reloaded = dynamic_cast<const TextVectorization&>(*loaded->layers()[0]);
    EXPECT_EQ(reloaded.get_vocabulary(), vectorize.get_vocabulary());
  }
  // Keras 3 keeps the adapted vocabulary as an asset, at the layer's path and its
  // StringLookup's, and the config's vocabulary stays null.
  const io::ZipReader zip = io::ZipReader::open(dir.file("m.keras"));
  const std::vector<std::string> vocabulary = vectorize.get_vocabulary();
  ASSERT_EQ(vocabulary[0], "");  // the mask, then [UNK]
  std::string asset;
  for (size_t i = 0; i < vocabulary.size(); ++i) asset += (i ? "\n" : "") + vocabulary[i];
  EXPECT_EQ(zip.read("assets/layers/text_vectorization/vocabulary.txt"), asset);
  EXPECT_EQ(zip.read("assets/layers/text_vectorization/_lookup_layer/vocabulary.txt"), asset);
  const nlohmann::json config = nlohmann::json::parse(zip.read("config.json"));
  int checked = 0;
  for (const nlohmann::json& layer : config["config"]["layers"])
    if (layer["class_name"] == "TextVectorization") {
      EXPECT_TRUE(layer["config"]["vocabulary"].is_null());
      ++checked;
    }
  EXPECT_EQ(checked, 1);
  // A string batch fed to a model without host layers is a clear error, not a crash.
  Sequential numeric({InputLayer({.shape = {1}}), Dense(1)});
  KILN_EXPECT_ERROR(numeric.predict(probe), DTypeError, "string");
}

}  // namespace
}  // namespace kiln::keras
