// Text classifiers whose first layer is TextVectorization, Sequential and Functional (the Keras
// text classification tutorial on a folder of files): the host layers run on each batch before
// the compiled step in fit, evaluate and predict, and the models save and load in .h5 (the
// vocabulary in the config) and .keras (the vocabulary in the archive's assets).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kiln/io/zip_archive.h"
#include "tests/io/python_check.h"
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

// A folder for text_dataset_from_directory: neg/ and pos/ with `per_class` reviews each. Every
// review holds one sentiment word (pos: good, great, excellent, loved; neg: bad, awful, boring,
// hated) among filler words both classes share, so the mean of the token embeddings separates
// the classes linearly (the sentiment words' embeddings against the filler's): a trained
// Embedding + GlobalAveragePooling1D + Dense classifies every review, training or held out.
void write_reviews(const std::filesystem::path& root, int per_class) {
  const std::vector<std::string> filler = {"the movie was", "this film is", "a plot that felt", "the acting seemed",
                                           "honestly it was", "my friends said it was so"};
  const std::vector<std::string> pos = {"good", "great", "excellent", "loved"};
  const std::vector<std::string> neg = {"bad", "awful", "boring", "hated"};
  for (int i = 0; i < per_class; ++i)
    for (const char* label : {"neg", "pos"}) {
      const auto& words = std::string(label) == "pos" ? pos : neg;
      const std::filesystem::path dir = root / label;
      std::filesystem::create_directories(dir);
      std::ofstream(dir / (std::to_string(i) + ".txt"))
          << filler[static_cast<size_t>(i) % filler.size()] << " " << words[static_cast<size_t>(i) % words.size()]
          << ". " << filler[static_cast<size_t>(i / 2 + 1) % filler.size()] << "!";
    }
}

// The folder's training and validation subsets (Keras's 0.25 split), 8 texts a batch.
std::pair<utils::DirectoryDataset, utils::DirectoryDataset> review_datasets(const kiln::testing::TempDir& dir,
                                                                            uint64_t seed) {
  write_reviews(dir.path() / "reviews", 24);
  auto [train_ds, val_ds] = utils::text_dataset_from_directory(
      (dir.path() / "reviews").string(),
      {.batch_size = 8, .seed = seed, .validation_split = 0.25, .subset = "both", .verbose = false});
  return {train_ds, val_ds};
}

// The tutorial's compile (logits, accuracy at threshold 0) with a larger Adam step for the small
// folder, and 40 epochs of fit.
History compile_and_fit(Model& model, const data::Dataset& train_ds, const data::Dataset& val_ds) {
  model.compile({.optimizer = Adam({.learning_rate = 0.01}),
                 .loss = BinaryCrossentropy({.from_logits = true}),
                 .metrics = {BinaryAccuracy("binary_accuracy", 0.0)}});
  return model.fit(train_ds, {.epochs = 40, .validation_data = val_ds, .verbose = 0});
}

// The tutorial's model: string input -> TextVectorization -> Embedding -> Dropout ->
// GlobalAveragePooling1D -> Dropout -> Dense(1) logits.
std::unique_ptr<Functional> tutorial_model(TextVectorization& vectorize_layer, int64_t max_features) {
  KerasTensor inputs = Input({1}, {.dtype = DType::kString});
  KerasTensor x = vectorize_layer(inputs);
  x = Embedding(max_features + 1, 16)(x);
  x = Dropout(0.2, {.seed = 1})(x);
  x = GlobalAveragePooling1D()(x);
  x = Dropout(0.2, {.seed = 2})(x);
  KerasTensor outputs = Dense(1)(x);
  return std::make_unique<Functional>(std::vector<KerasTensor>{inputs}, outputs);
}

TEST(TextFunctionalTest, TrainsTheTutorialModelOnATextFolderAndReloadsIt) {
  kiln::testing::TempDir dir;
  auto [train_ds, val_ds] = review_datasets(dir, 42);
  EXPECT_EQ(train_ds.class_names, (std::vector<std::string>{"neg", "pos"}));
  const int64_t max_features = 40;
  TextVectorization vectorize_layer({.max_tokens = max_features, .output_mode = "int", .output_sequence_length = 12});
  vectorize_layer.adapt(train_ds);  // the elements' first component: the texts
  std::unique_ptr<Functional> model = tutorial_model(vectorize_layer, max_features);
  // The user's object and the model's layer share one vocabulary (adapted before the call).
  const auto& in_model = dynamic_cast<const TextVectorization&>(model->get_layer("text_vectorization"));
  EXPECT_EQ(in_model.get_vocabulary(), vectorize_layer.get_vocabulary());
  EXPECT_EQ(model->host_layers().size(), 1u);
  EXPECT_EQ(model->host_layers()[0].size(), 1u);
  const History h = compile_and_fit(*model, train_ds, val_ds);
  EXPECT_GE(h.history.at("binary_accuracy").back(), 0.95);
  EXPECT_GE(h.history.at("val_binary_accuracy").back(), 0.95);
  const Logs logs = model->evaluate(val_ds, {.verbose = 0});
  EXPECT_GE(logs.at("binary_accuracy"), 0.95);
  // Unseen reviews: the sentiment word decides (rank 1 string batches, as the tutorial's
  // export_model.predict takes them).
  const HostTensor probe = HostTensor::from_vector<std::string>(
      {4}, {"a great film", "an awful movie, honestly", "The acting was EXCELLENT!", "boring plot"});
  const std::vector<float> want = model->predict(probe).to_vector<float>();
  ASSERT_EQ(want.size(), 4u);
  EXPECT_GT(want[0], 0);
  EXPECT_LT(want[1], 0);
  EXPECT_GT(want[2], 0);
  EXPECT_LT(want[3], 0);
  for (const char* file : {"m.keras", "m.h5"}) {
    SCOPED_TRACE(file);
    model->save(dir.file(file));
    std::unique_ptr<Model> loaded = load_model(dir.file(file));
    ASSERT_NE(dynamic_cast<Functional*>(loaded.get()), nullptr);
    EXPECT_EQ(loaded->predict(probe).to_vector<float>(), want);
    const auto& reloaded = dynamic_cast<const TextVectorization&>(loaded->get_layer("text_vectorization"));
    EXPECT_EQ(reloaded.get_vocabulary(), vectorize_layer.get_vocabulary());
    // The loaded model keeps its compile arguments and evaluates the folder alike.
    EXPECT_EQ(loaded->evaluate(val_ds, {.verbose = 0}).at("binary_accuracy"), logs.at("binary_accuracy"));
  }
  // Keras 3's layout: the string input, the vocabulary assets, the int64 ids into Embedding.
  if (!io::testing::python_has("h5py, numpy")) GTEST_SKIP() << "/usr/bin/python3 lacks h5py";
  const std::string check = "/usr/bin/python3 " KILN_KERAS3_LAYOUT_CHECK " " + dir.file("m.keras");
  EXPECT_EQ(std::system(check.c_str()), 0);
}

TEST(TextFunctionalTest, TheSequentialFormTrainsAlike) {
  kiln::testing::TempDir dir;
  auto [train_ds, val_ds] = review_datasets(dir, 7);
  TextVectorization vectorize_layer({.max_tokens = 40, .output_sequence_length = 12});
  vectorize_layer.adapt(train_ds);
  Sequential model({InputLayer({.shape = {1}}), vectorize_layer, Embedding(41, 16), Dropout(0.2, {.seed = 1}),
                    GlobalAveragePooling1D(), Dropout(0.2, {.seed = 2}), Dense(1)});
  const History h = compile_and_fit(model, train_ds, val_ds);
  EXPECT_GE(h.history.at("binary_accuracy").back(), 0.95);
  EXPECT_GE(h.history.at("val_binary_accuracy").back(), 0.95);
  const HostTensor probe = HostTensor::from_vector<std::string>({2}, {"loved it", "hated it"});
  const std::vector<float> want = model.predict(probe).to_vector<float>();
  EXPECT_GT(want[0], 0);
  EXPECT_LT(want[1], 0);
  model.save(dir.file("s.keras"));
  EXPECT_EQ(load_model(dir.file("s.keras"))->predict(probe).to_vector<float>(), want);
  if (!io::testing::python_has("h5py, numpy")) GTEST_SKIP() << "/usr/bin/python3 lacks h5py";
  const std::string check = "/usr/bin/python3 " KILN_KERAS3_LAYOUT_CHECK " " + dir.file("s.keras");
  EXPECT_EQ(std::system(check.c_str()), 0);
}

TEST(TextFunctionalTest, RunsEachInputThroughItsOwnHostLayers) {
  // Two inputs, each through its own host layer: word counts by StringLookup ([UNK] 0, a 1,
  // b 2, c 3) and one-hot codes by IntegerLookup (OOV 0, 10 -> 1, 20 -> 2), then compiled
  // Dense layers weighing them by id (words) and by 10 x id (codes), added.
  KerasTensor words = Input({2}, {.name = "words", .dtype = DType::kString});
  KerasTensor codes = Input({1}, {.name = "codes", .dtype = DType::kI64});
  KerasTensor counts = StringLookup({.vocabulary = {"a", "b", "c"}, .output_mode = "count"})(words);
  KerasTensor onehot = IntegerLookup({.vocabulary = {10, 20}, .output_mode = "one_hot"})(codes);
  KerasTensor by_word = Dense(1, {.use_bias = false, .name = "by_word"})(counts);
  KerasTensor by_code = Dense(1, {.use_bias = false, .name = "by_code"})(onehot);
  Functional model({words, codes}, Add()({by_word, by_code}));
  model.get_layer("by_word").weights()[0].assign(Tensor(HostTensor::from_vector<float>({4, 1}, {0, 1, 2, 3})));
  model.get_layer("by_code").weights()[0].assign(Tensor(HostTensor::from_vector<float>({3, 1}, {0, 10, 20})));
  EXPECT_EQ(model.host_layers().size(), 2u);
  const HostTensor w = HostTensor::from_vector<std::string>({3, 2}, {"a", "c", "b", "zz", "c", "c"});
  const HostTensor c = HostTensor::from_vector<int64_t>({3, 1}, {20, 10, 7});
  // Rows: (1 + 3) + 20, (2 + 0) + 10, (3 + 3) + 0 (7 is out of vocabulary).
  const data::Dataset ds = data::Dataset::from_tensor_slices(std::vector<HostTensor>{w, c}).batch(3);
  EXPECT_EQ(model.predict(ds).to_vector<float>(), (std::vector<float>{24, 12, 6}));
}

TEST(TextFunctionalTest, AdaptAfterTheCallReachesTheModelsLayer) {
  // The user's object and the graph's copy share one table, so adapting either way round works.
  StringLookup lookup;
  KerasTensor words = Input({1}, {.dtype = DType::kString});
  Functional model({words}, lookup(words));
  lookup.adapt(HostTensor::from_vector<std::string>({4}, {"b", "a", "b", "b"}));  // [UNK] 0, b 1, a 2
  EXPECT_EQ(model.predict(HostTensor::from_vector<std::string>({3, 1}, {"a", "b", "zz"})).to_vector<int64_t>(),
            (std::vector<int64_t>{2, 1, 0}));
}

TEST(TextFunctionalTest, AHostLayerAfterACompiledLayerIsACompileErrorNamingIt) {
  KerasTensor x = Input({3});
  KerasTensor h = Dense(3, {.name = "dense_in"})(x);
  KerasTensor looked_up = IntegerLookup({.vocabulary = {1, 2, 3}, .name = "late_lookup"})(h);
  Functional late({x}, Dense(1)(looked_up));
  KILN_EXPECT_ERROR(late.predict(HostTensor::from_vector<float>({1, 3}, {1, 2, 3})), CompileError, "[late_lookup] IntegerLookup runs on the host, before the compiled step, but here it takes the output of a compiled layer");
  // An input that feeds a host layer and a compiled one: the host layer replaces it.
  KerasTensor y = Input({1}, {.name = "ids", .dtype = DType::kI64});
  KerasTensor looked = IntegerLookup({.vocabulary = {1, 2}, .name = "lookup"})(y);
  KerasTensor both = Concatenate()({Dense(2)(looked), Dense(2, {.name = "raw"})(y)});
  Functional shared({y}, Dense(1)(both));
  KILN_EXPECT_ERROR(shared.predict(HostTensor::from_vector<int64_t>({1, 1}, {2})), CompileError,
                    "input 'ids' feeds the host layer 'lookup' (IntegerLookup) and also 'raw' (Dense)");
}

TEST(TextFunctionalTest, ANestedModelsHostLayerIsACompileErrorNamingBoth) {
  // The tutorial's export model: the vectorizing model nested in one that adds the sigmoid.
  KerasTensor text = Input({1}, {.dtype = DType::kString});
  KerasTensor ids = StringLookup({.vocabulary = {"a", "b"}, .name = "words"})(text);
  KerasTensor logit = Dense(1)(GlobalAveragePooling1D()(Embedding(3, 2)(ids)));
  auto inner = std::make_shared<Functional>(std::vector<KerasTensor>{text}, logit, FunctionalOptions{.name = "scorer"});
  KerasTensor raw = Input({1}, {.dtype = DType::kString});
  Functional outer({raw}, Activation("sigmoid")((*inner)(raw)), {.name = "export"});
  const HostTensor probe = HostTensor::from_vector<std::string>({2, 1}, {"a", "zz"});
  KILN_EXPECT_ERROR(outer.predict(probe), CompileError,
                    "[export] the model 'scorer' (Functional), used here as a layer, holds the host layer 'words' "
                    "(StringLookup)");
  // A Sequential around it alike.
  Sequential wrapped({InputLayer({.shape = {1}}), ModelLayer(inner), Activation("sigmoid")}, {.name = "wrapped"});
  KILN_EXPECT_ERROR(wrapped.predict(probe), CompileError, "[wrapped] the model 'scorer' (Functional)");
  // The inner model alone runs its host layer.
  EXPECT_EQ(inner->predict(probe).dims(), (Dims{2, 1}));
}

}  // namespace
}  // namespace kiln::keras
