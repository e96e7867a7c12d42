// TextVectorization (keras.layers): strings to token ids or token counts. Standardize, split
// into tokens, make n-grams, then look the tokens up in a StringLookup vocabulary (mask "",
// OOV "[UNK]"), learned by adapt or given. Runs on the host, as StringLookup does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kiln/keras/layers/lookup_layers.h"

namespace kiln::keras {

/// Keras's ngrams argument: none, n (the widths 1..n), or a list of widths.
using NGramsArg = std::variant<std::monostate, int64_t, std::vector<int64_t>>;

struct TextVectorizationOptions {
  /// The most ids, the mask and OOV ids included (null: no cap).
  std::optional<int64_t> max_tokens = std::nullopt;
  /// "lower_and_strip_punctuation", "lower", "strip_punctuation" or null (none). Lowering is
  /// ASCII only and the punctuation is ASCII's 32 marks, as tf.strings does for Keras.
  std::optional<std::string> standardize = "lower_and_strip_punctuation";
  /// "whitespace" (runs of ASCII whitespace), "character" (UTF-8 characters) or null (the whole
  /// string is one token).
  std::optional<std::string> split = "whitespace";
  NGramsArg ngrams = std::monostate{};
  /// "int", "multi_hot", "count" or "tf_idf".
  std::string output_mode = "int";
  /// int mode: pad with 0 or cut every row to this many ids (null: the longest row of the batch).
  std::optional<int64_t> output_sequence_length = std::nullopt;
  /// multi_hot, count, tf_idf: rows of max_tokens entries whatever the vocabulary's size.
  bool pad_to_max_tokens = false;
  /// A fixed vocabulary (empty: learn it with adapt).
  std::vector<std::string> vocabulary = {};
  /// tf_idf's weights, one per vocabulary entry.
  std::vector<double> idf_weights = {};
  /// Kiln has neither sparse nor ragged tensors: both must be false.
  bool sparse = false;
  bool ragged = false;
  std::string encoding = "utf-8";
  Dims input_shape = {};
  std::string name = "";
};

class TextVectorization : public IndexLookupLayer<std::string> {
 public:
  explicit TextVectorization(TextVectorizationOptions options = {});
  static TextVectorization from_config(const std::string& config_json);
  std::string class_name() const override { return "TextVectorization"; }
  std::string get_config() const override { return config_with(std::nullopt); }
  std::shared_ptr<Layer> shared_copy() const override { return std::make_shared<TextVectorization>(*this); }

  /// string[batch] (or [batch, 1]) -> "int": i64 [batch, length]; the others: f32 [batch, depth].
  /// A string[] scalar gives one row without the batch axis.
  HostTensor host_call(const HostTensor& inputs) const override;
  /// The tokens (n-grams included) of each row, after standardize and split.
  std::vector<std::vector<std::string>> tokenize(const HostTensor& inputs) const;
  /// Learns the vocabulary from strings: an array string[n] or [n, 1], or a Dataset whose
  /// elements' first component holds them (`steps` limits the elements read). Each string is
  /// one document (tf_idf's document counts).
  void adapt(const HostTensor& data);
  void adapt(const data::Dataset& dataset, std::optional<int64_t> steps = std::nullopt);
  Dims compute_output_shape(const Dims& input_shape) const override;

 protected:
  std::string config_with(const std::optional<std::vector<std::string>>& vocabulary) const override;

 private:
  TextVectorizationOptions options_;
  std::vector<int64_t> widths_;  // the n-gram widths, empty without ngrams
};

namespace internal {
/// The standardize and split steps alone (exposed for tests).
std::string standardize_text(const std::string& text, const std::string& mode);
std::vector<std::string> split_text(const std::string& text, const std::optional<std::string>& mode);
/// tf.strings.ngrams: for each width in order, every window of that many tokens joined by " ".
std::vector<std::string> ngrams(const std::vector<std::string>& tokens, const std::vector<int64_t>& widths);
}  // namespace internal

}  // namespace kiln::keras
