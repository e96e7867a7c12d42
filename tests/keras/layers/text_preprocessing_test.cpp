// StringLookup, IntegerLookup and TextVectorization on the host: the outputs Keras's
// docstrings give, vocabularies that adapt learns by Keras's order (count, then token
// descending), tf_idf weights computed by hand, configs and the vocabulary asset.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/data/dataset.h"
#include "kiln/keras/layers/lookup_layers.h"
#include "kiln/keras/layers/text_vectorization.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using Strings = std::vector<std::string>;
using Ints = std::vector<int64_t>;

HostTensor strings(Dims dims, Strings v) { return HostTensor::from_vector<std::string>(std::move(dims), v); }
HostTensor ints(Dims dims, Ints v) { return HostTensor::from_vector<int64_t>(std::move(dims), v); }

const Strings kVocab = {"a", "b", "c", "d"};

TEST(StringLookupTest, KerasDocstringLookups) {
  const HostTensor data = strings({2, 3}, {"a", "c", "d", "d", "z", "b"});
  EXPECT_EQ(StringLookup({.vocabulary = kVocab})(data).to_vector<int64_t>(), (Ints{1, 3, 4, 4, 0, 2}));
  EXPECT_EQ(StringLookup({.vocabulary = kVocab})(data).shape(), Shape(DType::kI64, {2, 3}));
  // Two OOV ids: FarmHash sends "m" to 0 and "z" to 1 (Keras's docstring).
  EXPECT_EQ(StringLookup({.num_oov_indices = 2, .vocabulary = kVocab})(strings({2, 3}, {"a", "c", "d", "m", "z", "b"}))
                .to_vector<int64_t>(),
            (Ints{2, 4, 5, 0, 1, 3}));
  // The mask token takes id 0 and shifts the rest by one.
  EXPECT_EQ(StringLookup({.mask_token = "", .vocabulary = kVocab})(strings({2, 3}, {"a", "c", "d", "d", "", "b"}))
                .to_vector<int64_t>(),
            (Ints{2, 4, 5, 5, 0, 3}));
  // invert: ids back to tokens, an unknown id to the OOV token.
  const HostTensor back = StringLookup({.vocabulary = kVocab, .invert = true})(ints({2, 3}, {1, 3, 4, 4, 0, 2}));
  EXPECT_EQ(back.to_vector<std::string>(), (Strings{"a", "c", "d", "d", "[UNK]", "b"}));
  EXPECT_EQ(StringLookup({.vocabulary = kVocab, .invert = true})(ints({1}, {99})).to_vector<std::string>(),
            (Strings{"[UNK]"}));
}

TEST(StringLookupTest, EncodingsAsKerasDocstringGivesThem) {
  const HostTensor data = strings({2, 4}, {"a", "c", "d", "d", "d", "z", "b", "z"});
  const std::vector<float> multi_hot = StringLookup({.vocabulary = kVocab, .output_mode = "multi_hot"})(data).to_vector<float>();
  EXPECT_EQ(multi_hot, (std::vector<float>{0, 1, 0, 1, 1, 1, 0, 1, 0, 1}));
  const std::vector<float> count = StringLookup({.vocabulary = kVocab, .output_mode = "count"})(data).to_vector<float>();
  EXPECT_EQ(count, (std::vector<float>{0, 1, 0, 1, 2, 2, 0, 1, 0, 1}));
  // tf_idf: counts times the weights; the OOV id gets their mean, (0.25 + 0.75 + 0.6 + 0.4) / 4.
  StringLookup tf_idf({.vocabulary = kVocab, .idf_weights = {0.25, 0.75, 0.6, 0.4}, .output_mode = "tf_idf"});
  const std::vector<float> got = tf_idf(data).to_vector<float>();
  const std::vector<float> want = {0, 0.25f, 0, 0.6f, 0.8f, 1.0f, 0, 0.75f, 0, 0.4f};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  // one_hot: a depth axis; a last axis of 1 is replaced. pad_to_max_tokens widens the rows.
  StringLookup one_hot({.vocabulary = kVocab, .output_mode = "one_hot"});
  EXPECT_EQ(one_hot(strings({2, 1}, {"c", "q"})).to_vector<float>(), (std::vector<float>{0, 0, 0, 1, 0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(one_hot(strings({2, 1}, {"c", "q"})).dims(), (Dims{2, 5}));
  StringLookup padded({.max_tokens = 7, .vocabulary = kVocab, .output_mode = "multi_hot", .pad_to_max_tokens = true});
  EXPECT_EQ(padded(strings({3}, {"a", "a", "b"})).to_vector<float>(), (std::vector<float>{0, 1, 1, 0, 0, 0, 0}));
}

TEST(StringLookupTest, AdaptOrdersByCountThenTokenDescending) {
  // Keras's docstring: adapt on [["a", "c", "d"], ["d", "z", "b"]] gives [UNK], d, z, c, b, a:
  // d (twice) first, then the ties in descending order.
  StringLookup layer;
  layer.adapt(strings({2, 3}, {"a", "c", "d", "d", "z", "b"}));
  EXPECT_EQ(layer.get_vocabulary(), (Strings{"[UNK]", "d", "z", "c", "b", "a"}));
  EXPECT_EQ(layer(strings({2, 3}, {"a", "c", "d", "d", "z", "b"})).to_vector<int64_t>(), (Ints{5, 3, 1, 1, 2, 4}));
  // max_tokens keeps the most frequent; the mask and OOV tokens never enter the learned part.
  StringLookup capped({.max_tokens = 4, .mask_token = ""});
  capped.adapt(strings({7}, {"x", "y", "y", "", "", "", "w"}));
  EXPECT_EQ(capped.get_vocabulary(), (Strings{"", "[UNK]", "y", "x"}));
  EXPECT_EQ(capped.get_vocabulary(/*include_special_tokens=*/false), (Strings{"y", "x"}));
  EXPECT_EQ(capped.vocabulary_size(), 4);
  // From a Dataset of batches (each rank-1 batch one document), limited by steps.
  StringLookup from_ds;
  from_ds.adapt(data::Dataset::from_tensor_slices(strings({5}, {"p", "q", "q", "r", "r"})).batch(2), /*steps=*/2);
  EXPECT_EQ(from_ds.get_vocabulary(), (Strings{"[UNK]", "q", "r", "p"}));
}

TEST(StringLookupTest, TfIdfWeightsFromAdapt) {
  // Documents "a b", "a c", "a": idf = log(1 + 3 / (1 + document count)); OOV: their mean.
  StringLookup layer({.output_mode = "tf_idf"});
  layer.adapt(strings({3, 2}, {"a", "b", "a", "c", "a", "a"}));
  EXPECT_EQ(layer.get_vocabulary(), (Strings{"[UNK]", "a", "c", "b"}));
  const double ia = std::log(1 + 3.0 / 4), ibc = std::log(1 + 3.0 / 2), mean = (ia + 2 * ibc) / 3;
  const std::vector<float> w = layer.saved_idf_weights();
  ASSERT_EQ(w.size(), 4u);
  EXPECT_NEAR(w[0], mean, 1e-6);
  EXPECT_NEAR(w[1], ia, 1e-6);
  EXPECT_NEAR(w[2], ibc, 1e-6);
  const std::vector<float> out = layer(strings({3}, {"a", "a", "zz"})).to_vector<float>();
  EXPECT_NEAR(out[0], mean, 1e-6);
  EXPECT_NEAR(out[1], 2 * ia, 1e-6);
  EXPECT_EQ(out[2], 0.0f);
}

TEST(StringLookupTest, ErrorsNameTheLayerAndTheProblem) {
  KILN_EXPECT_ERROR(StringLookup({.vocabulary = kVocab})(ints({1}, {1})), DTypeError, "expected string inputs");
  KILN_EXPECT_ERROR(StringLookup({.num_oov_indices = 0, .vocabulary = kVocab})(strings({1}, {"q"})), ValueError,
                    "found the OOV value 'q'");
  KILN_EXPECT_ERROR(StringLookup({.vocabulary = {"a", "a"}}), ValueError, "repeats the term 'a'");
  KILN_EXPECT_ERROR(StringLookup({.output_mode = "tf_idf", .name = "tfidf"}).set_vocabulary(kVocab), ValueError,
                    "[tfidf] output_mode=\"tf_idf\" needs idf_weights");
  KILN_EXPECT_ERROR(StringLookup({.max_tokens = 3, .vocabulary = kVocab}), ValueError, "exceeds max_tokens=3");
  KILN_EXPECT_ERROR(StringLookup({.invert = true, .output_mode = "count"}), ValueError, "invert=true needs");
  KILN_EXPECT_ERROR(StringLookup()(strings({1}, {"a"})), ValueError, "no vocabulary yet");
  KILN_EXPECT_ERROR(StringLookup({.vocabulary = kVocab})(HostTensor::scalar<float>(1)), DTypeError,
                    "expected string inputs, received f32[]");
}

TEST(IntegerLookupTest, KerasDocstringLookupsAndAdapt) {
  const Ints vocab = {12, 36, 1138, 42};
  EXPECT_EQ(IntegerLookup({.vocabulary = vocab})(ints({2, 3}, {12, 1138, 42, 42, 1000, 36})).to_vector<int64_t>(),
            (Ints{1, 3, 4, 4, 0, 2}));
  // Two OOV ids: floormod, 37 -> 1 and 1000 -> 0 (Keras's docstring).
  EXPECT_EQ(IntegerLookup({.num_oov_indices = 2, .vocabulary = vocab})(ints({2, 3}, {12, 1138, 42, 37, 1000, 36}))
                .to_vector<int64_t>(),
            (Ints{2, 4, 5, 1, 0, 3}));
  IntegerLookup adapted;
  adapted.adapt(ints({2, 3}, {12, 1138, 42, 42, 1000, 36}));
  EXPECT_EQ(adapted.get_vocabulary(), (Ints{-1, 42, 1138, 1000, 36, 12}));
  // i32 input is looked up as int64; invert gives the tokens back.
  EXPECT_EQ(adapted(HostTensor::from_vector<int32_t>({2}, {36, 7})).to_vector<int64_t>(), (Ints{4, 0}));
  IntegerLookup inverse({.vocabulary = vocab, .invert = true});
  EXPECT_EQ(inverse(ints({3}, {1, 0, 4})).to_vector<int64_t>(), (Ints{12, -1, 42}));
  KILN_EXPECT_ERROR(IntegerLookup({.vocabulary = vocab})(strings({1}, {"12"})), DTypeError, "expected integer inputs");
}

TEST(TextVectorizationTest, StandardizeSplitAndNgrams) {
  EXPECT_EQ(internal::standardize_text("Hello, World! It's \xC3\x89T\xC3\x89", "lower_and_strip_punctuation"),
            "hello world its \xC3\x89t\xC3\x89");  // ASCII only, as tf.strings.lower
  EXPECT_EQ(internal::standardize_text("A-b.C", "lower"), "a-b.c");
  EXPECT_EQ(internal::standardize_text("A-b.C", "strip_punctuation"), "AbC");
  EXPECT_EQ(internal::split_text("  one\ttwo\n three ", std::string("whitespace")), (Strings{"one", "two", "three"}));
  EXPECT_EQ(internal::split_text("a\xC3\xB1" "b", std::string("character")), (Strings{"a", "\xC3\xB1", "b"}));
  EXPECT_EQ(internal::split_text("x y", std::nullopt), (Strings{"x y"}));
  EXPECT_EQ(internal::ngrams({"a", "b", "c"}, {1, 2}), (Strings{"a", "b", "c", "a b", "b c"}));
  EXPECT_EQ(internal::ngrams({"a", "b"}, {3}), Strings{});
  TextVectorization bigrams({.ngrams = 2, .vocabulary = {"hello", "hello world"}});
  EXPECT_EQ(bigrams(strings({1}, {"Hello, World!"})).to_vector<int64_t>(), (Ints{2, 1, 3}));
}

TEST(TextVectorizationTest, KerasDocstringVocabularyAndAdapt) {
  // vocabulary ["earth", "wind", "and", "fire"], output_sequence_length 4.
  TextVectorization given({.max_tokens = 5000, .output_sequence_length = 4, .vocabulary = {"earth", "wind", "and", "fire"}});
  const HostTensor out = given(strings({2, 1}, {"earth wind and also fire", "fire and earth michigan"}));
  EXPECT_EQ(out.shape(), Shape(DType::kI64, {2, 4}));
  EXPECT_EQ(out.to_vector<int64_t>(), (Ints{2, 3, 4, 1, 5, 4, 2, 1}));
  // adapt on "foo", "bar", "baz" (ties: descending), then [["foo qux bar"], ["qux baz"]].
  TextVectorization adapted({.max_tokens = 5000, .output_sequence_length = 4});
  adapted.adapt(data::Dataset::from_tensor_slices(strings({3}, {"foo", "bar", "baz"})).batch(64));
  EXPECT_EQ(adapted.get_vocabulary(), (Strings{"", "[UNK]", "foo", "baz", "bar"}));
  EXPECT_EQ(adapted(strings({2, 1}, {"foo qux bar", "qux baz"})).to_vector<int64_t>(), (Ints{2, 1, 4, 0, 1, 3, 0, 0}));
  // Without output_sequence_length the batch's longest row sets the length.
  TextVectorization ragged({.vocabulary = {"a", "b"}});
  EXPECT_EQ(ragged(strings({2}, {"a b b", "b"})).dims(), (Dims{2, 3}));
  EXPECT_EQ(ragged(strings({}, {"b a"})).to_vector<int64_t>(), (Ints{3, 2}));
}

TEST(TextVectorizationTest, CountsAndTfIdfByHand) {
  // Documents "The cat.", "the dog", "THE": the (3), then cat and dog tied (descending: dog, cat).
  const HostTensor corpus = strings({3}, {"The cat.", "the dog", "THE"});
  TextVectorization counts({.output_mode = "count"});
  counts.adapt(corpus);
  EXPECT_EQ(counts.get_vocabulary(), (Strings{"[UNK]", "the", "dog", "cat"}));
  EXPECT_EQ(counts(strings({2}, {"the THE bird", "cat"})).to_vector<float>(), (std::vector<float>{1, 2, 0, 0, 0, 0, 0, 1}));
  TextVectorization multi({.max_tokens = 6, .output_mode = "multi_hot", .pad_to_max_tokens = true});
  multi.adapt(corpus);
  EXPECT_EQ(multi(strings({1}, {"the the dog"})).to_vector<float>(), (std::vector<float>{0, 1, 1, 0, 0, 0}));
  TextVectorization tf_idf({.output_mode = "tf_idf"});
  tf_idf.adapt(corpus);
  const double i_the = std::log(1 + 3.0 / 4), i_one = std::log(1 + 3.0 / 2), oov = (i_the + 2 * i_one) / 3;
  const std::vector<float> got = tf_idf(strings({1}, {"the the cat fish"})).to_vector<float>();
  const std::vector<double> want = {oov, 2 * i_the, 0, i_one};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  KILN_EXPECT_ERROR(TextVectorization({.output_mode = "count", .output_sequence_length = 3}), ValueError,
                    "output_sequence_length is only for output_mode=\"int\"");
  KILN_EXPECT_ERROR(TextVectorization({.split = std::nullopt, .ngrams = 2}), ValueError, "ngrams need a split");
  KILN_EXPECT_ERROR(counts(ints({1}, {3})), DTypeError, "expected string inputs");
}

TEST(TextPreprocessingConfigTest, ConfigsAsKerasWritesThemAndTheVocabularyAsset) {
  TextVectorization layer({.max_tokens = 10, .ngrams = std::vector<int64_t>{1, 2}, .output_sequence_length = 5});
  layer.set_name("text_vectorization");
  layer.adapt(strings({2}, {"b a", "a"}));
  // tf.keras 2's dtypes, which it checks on load: "string" here, the output's for the lookups.
  EXPECT_EQ(layer.get_config(),
            R"({"dtype":"string","encoding":"utf-8","idf_weights":null,"max_tokens":10,"name":"text_vectorization",)"
            R"("ngrams":[1,2],"output_mode":"int","output_sequence_length":5,"pad_to_max_tokens":false,)"
            R"("ragged":false,"sparse":false,"split":"whitespace","standardize":"lower_and_strip_punctuation",)"
            R"("trainable":true,"vocabulary":null,"vocabulary_size":5})");
  // Keras 3's assets/.../vocabulary.txt: "\n".join of the vocabulary, special tokens included.
  EXPECT_EQ(layer.vocabulary_asset(), std::optional<std::string>("\n[UNK]\na\nb a\nb"));
  LayerHandle loaded = layer_from_config("TextVectorization", layer.get_config());
  auto& reloaded = dynamic_cast<TextVectorization&>(*loaded);
  reloaded.load_vocabulary_asset(*layer.vocabulary_asset());
  const HostTensor x = strings({2}, {"a b a", "zz b"});
  EXPECT_EQ(reloaded(x).to_vector<int64_t>(), layer(x).to_vector<int64_t>());
  EXPECT_EQ(reloaded.get_config(), layer.get_config());
  // .h5 has no assets: the config carries the vocabulary, which Keras reads as given.
  LayerHandle from_h5 = layer_from_config("TextVectorization", layer.get_config_with_vocabulary());
  EXPECT_EQ(dynamic_cast<TextVectorization&>(*from_h5)(x).to_vector<int64_t>(), layer(x).to_vector<int64_t>());

  StringLookup lookup({.mask_token = "", .vocabulary = kVocab, .name = "string_lookup"});
  EXPECT_EQ(lookup.get_config(),
            R"({"dtype":"int64","encoding":"utf-8","idf_weights":null,"invert":false,"mask_token":"",)"
            R"("max_tokens":null,"name":"string_lookup","num_oov_indices":1,"oov_token":"[UNK]","output_mode":"int",)"
            R"("pad_to_max_tokens":false,"sparse":false,"trainable":true,"vocabulary":["a","b","c","d"],)"
            R"("vocabulary_dtype":"string","vocabulary_size":6})");
  EXPECT_EQ(lookup.vocabulary_asset(), std::nullopt);  // the config holds it
  // A Keras 3 config as Keras writes it (with its dtype policy object and oov_method).
  LayerHandle k3 = layer_from_config("IntegerLookup", R"({"name": "integer_lookup", "trainable": true,
      "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "int64"}, "registered_name": null},
      "invert": false, "max_tokens": null, "num_oov_indices": 1, "oov_token": -1, "mask_token": null,
      "output_mode": "multi_hot", "sparse": false, "pad_to_max_tokens": false, "vocabulary_dtype": "int64",
      "idf_weights": null, "vocabulary": [5, 6], "vocabulary_size": 3, "oov_method": "floormod"})");
  EXPECT_EQ(dynamic_cast<IntegerLookup&>(*k3)(ints({3}, {6, 6, 9})).to_vector<float>(), (std::vector<float>{1, 0, 1}));
  EXPECT_NE(k3->get_config().find(R"("dtype":"float32")"), std::string::npos);  // multi_hot rows: tf.keras's floatx
  KILN_EXPECT_ERROR(layer_from_config("StringLookup", R"({"name": "s", "vocabulary": "/etc/vocab.txt"})"), ConfigError,
                    "vocabulary is a file path");
  KILN_EXPECT_ERROR(layer_from_config("TextVectorization", R"({"name": "t", "ragged": true})"), ConfigError, "ragged");
}

}  // namespace
}  // namespace kiln::keras
