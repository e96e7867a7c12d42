// IndexTable: Keras's IndexLookup rules on host vectors (index_lookup.py's set_vocabulary,
// update_state/finalize_state, _lookup_dense and encode_categorical_inputs).
#include "kiln/keras/layers/index_lookup.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "kiln/core/check.h"
#include "kiln/core/str_cat.h"
#include "kiln/keras/layers/hashing.h"

namespace kiln::keras::internal {
namespace {

std::string text(const std::string& s) { return "'" + s + "'"; }
std::string text(int64_t v) { return std::to_string(v); }

// An OOV key's offset among num_oov OOV ids: FarmHash of the string (tf.strings.to_hash_bucket_fast),
// or floormod for integers (Keras's default oov_method).
int64_t oov_bucket(const std::string& key, int64_t num_oov, const std::string& where) {
  if (key.size() > 32)
    KILN_THROW(ValueError, "[", where, "] num_oov_indices=", num_oov, " hashes OOV tokens with FarmHash, which Kiln ",
               "builds for tokens of up to 32 bytes; received one of ", key.size(), " bytes. Hint: num_oov_indices=1.");
  return static_cast<int64_t>(fingerprint64(key.data(), key.size()) % static_cast<uint64_t>(num_oov));
}
int64_t oov_bucket(int64_t key, int64_t num_oov, const std::string& /*where*/) {
  return ((key % num_oov) + num_oov) % num_oov;
}

}  // namespace

template <typename Key>
IndexTable<Key>::IndexTable(LookupArgs<Key> args, std::string where) : args_(std::move(args)), where_(std::move(where)) {
  static const std::set<std::string> kModes = {"int", "one_hot", "multi_hot", "count", "tf_idf"};
  if (args_.output_mode == "binary") args_.output_mode = "multi_hot";  // tf.keras 2's name
  if (!kModes.contains(args_.output_mode))
    KILN_THROW(ValueError, "[", where_, "] output_mode must be one of int, one_hot, multi_hot, count, tf_idf, ",
               "received output_mode=\"", args_.output_mode, "\".");
  if (args_.max_tokens && *args_.max_tokens <= 1)
    KILN_THROW(ValueError, "[", where_, "] max_tokens must be greater than 1 if set, received max_tokens=",
               *args_.max_tokens, ".");
  if (args_.pad_to_max_tokens && !args_.max_tokens)
    KILN_THROW(ValueError, "[", where_, "] pad_to_max_tokens=true needs max_tokens.");
  if (args_.num_oov_indices < 0)
    KILN_THROW(ValueError, "[", where_, "] num_oov_indices must be >= 0, received num_oov_indices=",
               args_.num_oov_indices, ".");
  if (args_.invert && args_.output_mode != "int")
    KILN_THROW(ValueError, "[", where_, "] invert=true needs output_mode=\"int\", received output_mode=\"",
               args_.output_mode, "\".");
}

template <typename Key>
void IndexTable<Key>::set_vocabulary(const std::vector<Key>& vocabulary, const std::vector<double>& idf_weights) {
  const bool tf_idf = args_.output_mode == "tf_idf";
  if (tf_idf && idf_weights.empty())
    KILN_THROW(ValueError, "[", where_, "] output_mode=\"tf_idf\" needs idf_weights with the vocabulary.");
  if (!tf_idf && !idf_weights.empty())
    KILN_THROW(ValueError, "[", where_, "] idf_weights are only for output_mode=\"tf_idf\", received output_mode=\"",
               args_.output_mode, "\".");
  if (vocabulary.empty()) KILN_THROW(ValueError, "[", where_, "] cannot set an empty vocabulary.");
  std::vector<Key> special;
  if (oov_start() == 1) special.push_back(*args_.mask_token);
  for (int64_t i = 0; i < args_.num_oov_indices; ++i)
    if (args_.oov_token) special.push_back(*args_.oov_token);
  const bool found_special = static_cast<int64_t>(special.size()) == token_start() && vocabulary.size() >= special.size() &&
                             std::equal(special.begin(), special.end(), vocabulary.begin());
  std::vector<Key> tokens(vocabulary.begin() + (found_special ? token_start() : 0), vocabulary.end());
  std::unordered_map<Key, int64_t> index;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!index.emplace(tokens[i], token_start() + static_cast<int64_t>(i)).second)
      KILN_THROW(ValueError, "[", where_, "] the vocabulary repeats the term ", text(tokens[i]),
                 ". Hint: pass each term once.");
    if (args_.mask_token && tokens[i] == *args_.mask_token)
      KILN_THROW(ValueError, "[", where_, "] the vocabulary holds the mask token ", text(tokens[i]),
                 " after the start: pass the special tokens only at the front, or not at all.");
    if (args_.invert && args_.oov_token && tokens[i] == *args_.oov_token)
      KILN_THROW(ValueError, "[", where_, "] the vocabulary holds the OOV token ", text(tokens[i]),
                 " after the start: pass the special tokens only at the front, or not at all.");
  }
  const int64_t size = token_start() + static_cast<int64_t>(tokens.size());
  if (args_.max_tokens && size > *args_.max_tokens)
    KILN_THROW(ValueError, "[", where_, "] a vocabulary of ", size, " entries (special tokens included) exceeds ",
               "max_tokens=", *args_.max_tokens, ".");
  if (tf_idf) {
    if (idf_weights.size() != vocabulary.size())
      KILN_THROW(ValueError, "[", where_, "] idf_weights has ", idf_weights.size(), " entries for a vocabulary of ",
                 vocabulary.size(), ".");
    const double mean = std::accumulate(idf_weights.begin(), idf_weights.end(), 0.0) / static_cast<double>(idf_weights.size());
    std::vector<float> w(found_special ? 0 : static_cast<size_t>(token_start()), static_cast<float>(mean));
    for (double v : idf_weights) w.push_back(static_cast<float>(v));
    if (args_.pad_to_max_tokens) w.resize(static_cast<size_t>(*args_.max_tokens), 0.0f);
    idf_weights_ = std::move(w);
  }
  tokens_ = std::move(tokens);
  index_ = std::move(index);
  vocabulary_set_ = true;
}

template <typename Key>
void IndexTable<Key>::reset_state() {
  counts_.clear();
  document_counts_.clear();
  num_documents_ = 0;
}

template <typename Key>
void IndexTable<Key>::update_state(const std::vector<std::vector<Key>>& documents) {
  for (const std::vector<Key>& doc : documents) {
    for (const Key& k : doc) ++counts_[k];
    if (args_.output_mode == "tf_idf") {
      for (const Key& k : std::set<Key>(doc.begin(), doc.end())) ++document_counts_[k];
      ++num_documents_;
    }
  }
}

template <typename Key>
void IndexTable<Key>::finalize_state() {
  if (args_.mask_token) counts_.erase(*args_.mask_token);
  if (args_.oov_token) counts_.erase(*args_.oov_token);
  if (counts_.empty()) KILN_THROW(ValueError, "[", where_, "] adapt found no tokens to learn a vocabulary from.");
  std::vector<std::pair<Key, int64_t>> sorted(counts_.begin(), counts_.end());
  // lexsort((tokens, counts))[::-1]: counts descending, equal counts by token descending.
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first > b.first;
  });
  if (args_.max_tokens) sorted.resize(std::min(sorted.size(), static_cast<size_t>(std::max<int64_t>(0, *args_.max_tokens - token_start()))));
  tokens_.clear();
  index_.clear();
  for (const auto& [token, count] : sorted) {
    index_.emplace(token, token_start() + static_cast<int64_t>(tokens_.size()));
    tokens_.push_back(token);
  }
  if (args_.output_mode == "tf_idf") {
    std::vector<float> idf;
    for (const Key& t : tokens_) {
      const auto it = document_counts_.find(t);
      const double df = it == document_counts_.end() ? 0.0 : static_cast<double>(it->second);
      idf.push_back(static_cast<float>(std::log(1.0 + static_cast<double>(num_documents_) / (1.0 + df))));
    }
    const float mean = idf.empty() ? 0.0f : std::accumulate(idf.begin(), idf.end(), 0.0f) / static_cast<float>(idf.size());
    idf.insert(idf.begin(), static_cast<size_t>(token_start()), mean);
    if (args_.pad_to_max_tokens) idf.resize(static_cast<size_t>(*args_.max_tokens), 0.0f);
    idf_weights_ = std::move(idf);
  }
  vocabulary_set_ = true;
  reset_state();
}

template <typename Key>
std::vector<Key> IndexTable<Key>::vocabulary(bool include_special_tokens) const {
  std::vector<Key> v;
  if (include_special_tokens) {
    if (oov_start() == 1) v.push_back(*args_.mask_token);
    for (int64_t i = 0; i < args_.num_oov_indices; ++i) v.push_back(args_.oov_token ? *args_.oov_token : Key{});
  }
  v.insert(v.end(), tokens_.begin(), tokens_.end());
  return v;
}

template <typename Key>
int64_t IndexTable<Key>::depth() const {
  return args_.pad_to_max_tokens ? *args_.max_tokens : vocabulary_size();
}

template <typename Key>
void IndexTable<Key>::require_vocabulary() const {
  if (!vocabulary_set_)
    KILN_THROW(ValueError, "[", where_, "] the layer has no vocabulary yet. Hint: pass vocabulary= or call adapt().");
}

template <typename Key>
std::vector<int64_t> IndexTable<Key>::ids(std::span<const Key> keys) const {
  require_vocabulary();
  std::vector<int64_t> out(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const Key& k = keys[i];
    if (args_.mask_token && k == *args_.mask_token) {
      out[i] = args_.output_mode == "int" ? 0 : -1;
      continue;
    }
    const auto it = index_.find(k);
    if (it != index_.end()) {
      out[i] = it->second;
    } else if (args_.num_oov_indices == 0) {
      KILN_THROW(ValueError, "[", where_, "] with num_oov_indices=0 every input must be in the vocabulary; found ",
                 "the OOV value ", text(k), ". Hint: num_oov_indices=1.");
    } else {
      out[i] = oov_start() + (args_.num_oov_indices == 1 ? 0 : oov_bucket(k, args_.num_oov_indices, where_));
    }
  }
  return out;
}

template <typename Key>
std::vector<Key> IndexTable<Key>::tokens(std::span<const int64_t> ids) const {
  require_vocabulary();
  std::vector<Key> out(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (args_.mask_token && id == 0) out[i] = *args_.mask_token;
    else if (id >= token_start() && id < vocabulary_size()) out[i] = tokens_[static_cast<size_t>(id - token_start())];
    else out[i] = args_.oov_token ? *args_.oov_token : Key{};
  }
  return out;
}

template <typename Key>
HostTensor IndexTable<Key>::encode(const std::vector<std::vector<int64_t>>& rows) const {
  const int64_t d = depth();
  HostTensor out(Shape(DType::kF32, {static_cast<int64_t>(rows.size()), d}));
  auto dst = out.data<float>();
  const bool hot = args_.output_mode == "multi_hot" || args_.output_mode == "one_hot";
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t id : rows[r]) {
      if (id < 0 || id >= d) continue;
      float& v = dst[r * static_cast<size_t>(d) + static_cast<size_t>(id)];
      v = hot ? 1.0f : v + 1.0f;
    }
  if (args_.output_mode == "tf_idf") {
    if (static_cast<int64_t>(idf_weights_.size()) < d)
      KILN_THROW(ValueError, "[", where_, "] output_mode=\"tf_idf\" needs idf_weights for ", d, " ids, has ",
                 idf_weights_.size(), ".");
    for (size_t i = 0; i < dst.size(); ++i) dst[i] *= idf_weights_[i % static_cast<size_t>(d)];
  }
  return out;
}

template class IndexTable<std::string>;
template class IndexTable<int64_t>;

}  // namespace kiln::keras::internal
