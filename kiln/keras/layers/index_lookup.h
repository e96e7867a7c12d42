// The vocabulary table behind StringLookup, IntegerLookup and TextVectorization: Keras's
// IndexLookup (keras/src/layers/preprocessing/index_lookup.py) on the host. It maps tokens to
// ids (mask 0 in "int" mode, then the OOV ids, then the vocabulary), ids back to tokens
// (invert), encodes ids as one_hot / multi_hot / count / tf_idf rows, and learns a vocabulary
// from token counts as Keras's adapt does.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/core/host_tensor.h"

namespace kiln::keras::internal {

/// Keras's IndexLookup arguments, in its keyword order.
template <typename Key>
struct LookupArgs {
  std::optional<int64_t> max_tokens = std::nullopt;
  int64_t num_oov_indices = 1;
  std::optional<Key> mask_token = std::nullopt;
  std::optional<Key> oov_token = std::nullopt;
  bool invert = false;
  std::string output_mode = "int";
  bool pad_to_max_tokens = false;
};

template <typename Key>
class IndexTable {
 public:
  /// Checks the arguments as Keras does (ValueError naming `where`, the layer).
  IndexTable(LookupArgs<Key> args, std::string where);

  const LookupArgs<Key>& args() const { return args_; }
  /// Keras's set_vocabulary: `vocabulary` may start with the special tokens (mask, then the
  /// OOV tokens, as get_vocabulary() returns them) or hold the tokens alone. `idf_weights`
  /// (tf_idf only, one per entry of `vocabulary`) get the average in front for the special
  /// ids when the vocabulary has none, and zeros behind up to max_tokens with pad_to_max_tokens.
  void set_vocabulary(const std::vector<Key>& vocabulary, const std::vector<double>& idf_weights = {});
  bool has_vocabulary() const { return vocabulary_set_; }

  /// adapt, in Keras's three steps: forget the counts, count the tokens of each document
  /// (a tf_idf layer also counts the documents holding each token), and make the vocabulary:
  /// tokens by count, most frequent first, ties by token in *descending* order (numpy's
  /// lexsort on (tokens, counts) reversed), the mask and OOV tokens left out, cut to
  /// max_tokens minus the special ids; tf_idf weights log(1 + documents / (1 + document
  /// count)), the OOV ids weighted by their mean.
  void reset_state();
  void update_state(const std::vector<std::vector<Key>>& documents);
  void finalize_state();

  /// The vocabulary, the special tokens first (as Keras's get_vocabulary): mask (int mode),
  /// then num_oov_indices OOV tokens.
  std::vector<Key> vocabulary(bool include_special_tokens = true) const;
  int64_t vocabulary_size() const { return token_start() + static_cast<int64_t>(tokens_.size()); }
  /// Width of the encoded rows: max_tokens with pad_to_max_tokens, else vocabulary_size().
  int64_t depth() const;
  /// The idf weights of every id (tf_idf), as Keras saves them.
  const std::vector<float>& idf_weights() const { return idf_weights_; }
  void set_idf_weights(std::vector<float> weights) { idf_weights_ = std::move(weights); }

  /// The id of each key: the mask token 0 (int mode; -1, dropped from counts, otherwise), a
  /// vocabulary token its index, others an OOV id (one OOV id: oov_start(); several: hashed
  /// as Keras does; none: ValueError).
  std::vector<int64_t> ids(std::span<const Key> keys) const;
  /// invert: the token of each id (mask_token for 0 with a mask, oov_token outside the vocabulary).
  std::vector<Key> tokens(std::span<const int64_t> ids) const;
  /// The encoded rows (one_hot: one row per id; multi_hot, count, tf_idf: one row per list of
  /// ids), f32 [rows, depth()]. Ids < 0 or >= depth() count nowhere.
  HostTensor encode(const std::vector<std::vector<int64_t>>& rows) const;

  int64_t oov_start() const { return args_.mask_token && args_.output_mode == "int" ? 1 : 0; }
  int64_t token_start() const { return oov_start() + args_.num_oov_indices; }

 private:
  void require_vocabulary() const;

  LookupArgs<Key> args_;
  std::string where_;
  bool vocabulary_set_ = false;
  std::vector<Key> tokens_;  // the learned or given tokens, id = token_start() + index
  std::unordered_map<Key, int64_t> index_;
  std::vector<float> idf_weights_;
  std::unordered_map<Key, int64_t> counts_, document_counts_;
  int64_t num_documents_ = 0;
};

extern template class IndexTable<std::string>;
extern template class IndexTable<int64_t>;

}  // namespace kiln::keras::internal
