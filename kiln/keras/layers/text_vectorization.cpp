// TextVectorization: Keras's standardize / split / ngrams (text_vectorization.py, with
// tf.strings' ASCII lowering and whitespace), then the StringLookup table.
#include "kiln/keras/layers/text_vectorization.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "kiln/core/check.h"
#include "kiln/data/iterator.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"

namespace kiln::keras {
namespace internal {

std::string standardize_text(const std::string& text, const std::string& mode) {
  // Keras's DEFAULT_STRIP_REGEX: [!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\'], every ASCII mark.
  const bool lower = mode == "lower" || mode == "lower_and_strip_punctuation";
  const bool strip = mode == "strip_punctuation" || mode == "lower_and_strip_punctuation";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (strip && u < 128 && std::ispunct(u)) continue;
    out.push_back(lower && u < 128 ? static_cast<char>(std::tolower(u)) : c);
  }
  return out;
}

std::vector<std::string> split_text(const std::string& text, const std::optional<std::string>& mode) {
  if (!mode) return {text};
  std::vector<std::string> tokens;
  if (*mode == "whitespace") {  // tf.strings.split(sep=None): runs of " \t\n\v\f\r", no empty tokens
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && std::strchr(" \t\n\v\f\r", text[i]) != nullptr && text[i] != '\0') ++i;
      size_t j = i;
      while (j < text.size() && (std::strchr(" \t\n\v\f\r", text[j]) == nullptr || text[j] == '\0')) ++j;
      if (j > i) tokens.push_back(text.substr(i, j - i));
      i = j;
    }
    return tokens;
  }
  // "character": tf.strings.unicode_split(.., "UTF-8"); a malformed byte becomes U+FFFD, as there.
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    bool ok = n > 0 && i + n <= text.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
    if (ok) {
      tokens.push_back(text.substr(i, n));
      i += n;
    } else {
      tokens.emplace_back("\xEF\xBF\xBD");
      ++i;
    }
  }
  return tokens;
}

std::vector<std::string> ngrams(const std::vector<std::string>& tokens, const std::vector<int64_t>& widths) {
  std::vector<std::string> out;
  for (int64_t w : widths) {
    const auto width = static_cast<size_t>(w);
    for (size_t i = 0; i + width <= tokens.size(); ++i) {
      std::string g = tokens[i];
      for (size_t k = 1; k < width; ++k) g += " " + tokens[i + k];
      out.push_back(std::move(g));
    }
  }
  return out;
}

}  // namespace internal

namespace {

using nlohmann::json;

internal::LookupArgs<std::string> table_args(const TextVectorizationOptions& o) {
  return {.max_tokens = o.max_tokens,
          .num_oov_indices = 1,
          .mask_token = std::string(),
          .oov_token = std::string("[UNK]"),
          .invert = false,
          .output_mode = o.output_mode,
          .pad_to_max_tokens = o.pad_to_max_tokens};
}

std::string at(const TextVectorizationOptions& o) { return o.name.empty() ? "TextVectorization" : o.name; }

}  // namespace

TextVectorization::TextVectorization(TextVectorizationOptions options)
    : IndexLookupLayer<std::string>(table_args(options), options.vocabulary, options.idf_weights, options.name,
                                    options.input_shape, "TextVectorization"),
      options_(std::move(options)) {
  const TextVectorizationOptions& o = options_;
  if (o.output_mode != "int" && o.output_mode != "multi_hot" && o.output_mode != "count" && o.output_mode != "tf_idf")
    KILN_THROW(ValueError, "[", at(o), "] output_mode must be int, multi_hot, count or tf_idf, received output_mode=\"",
               o.output_mode, "\".");
  if (o.standardize && *o.standardize != "lower_and_strip_punctuation" && *o.standardize != "lower" &&
      *o.standardize != "strip_punctuation")
    KILN_THROW(ValueError, "[", at(o), "] standardize must be lower_and_strip_punctuation, lower, strip_punctuation ",
               "or none (Kiln takes no callables), received standardize=\"", *o.standardize, "\".");
  if (o.split && *o.split != "whitespace" && *o.split != "character")
    KILN_THROW(ValueError, "[", at(o), "] split must be whitespace, character or none (Kiln takes no callables), ",
               "received split=\"", *o.split, "\".");
  if (const auto* n = std::get_if<int64_t>(&o.ngrams)) {
    if (*n < 1) KILN_THROW(ValueError, "[", at(o), "] ngrams must be at least 1, received ngrams=", *n, ".");
    for (int64_t w = 1; w <= *n; ++w) widths_.push_back(w);
  } else if (const auto* list = std::get_if<std::vector<int64_t>>(&o.ngrams)) {
    for (int64_t w : *list)
      if (w < 1) KILN_THROW(ValueError, "[", at(o), "] ngrams widths must be at least 1, received ", w, ".");
    widths_ = *list;
  }
  if (!widths_.empty() && !o.split)
    KILN_THROW(ValueError, "[", at(o), "] ngrams need a split (split=none keeps each string whole).");
  if (o.output_sequence_length && o.output_mode != "int")
    KILN_THROW(ValueError, "[", at(o), "] output_sequence_length is only for output_mode=\"int\", received ",
               "output_mode=\"", o.output_mode, "\".");
  if (o.output_sequence_length && *o.output_sequence_length < 0)
    KILN_THROW(ValueError, "[", at(o), "] output_sequence_length must be >= 0, received ", *o.output_sequence_length, ".");
  if (o.sparse || o.ragged)
    KILN_THROW(ValueError, "[", at(o), "] sparse and ragged outputs are not built: Kiln has neither tensor kind.");
  if (o.encoding != "utf-8" && o.encoding != "UTF-8")
    KILN_THROW(ValueError, "[", at(o), "] encoding must be \"utf-8\", received \"", o.encoding, "\".");
}

std::vector<std::vector<std::string>> TextVectorization::tokenize(const HostTensor& inputs) const {
  if (!inputs.is_string())
    KILN_THROW(DTypeError, "[", at(options_), "] expected string inputs, received ", inputs.shape(), ".");
  if (inputs.rank() > 2 || (inputs.rank() == 2 && inputs.dims()[1] != 1))
    KILN_THROW(ShapeError, "[", at(options_), "] expected strings of shape (batch,) or (batch, 1), received ",
               inputs.shape(), ".");
  std::vector<std::vector<std::string>> rows;
  for (const std::string& s : inputs.data<std::string>()) {
    const std::string text = options_.standardize ? internal::standardize_text(s, *options_.standardize) : s;
    std::vector<std::string> tokens = internal::split_text(text, options_.split);
    rows.push_back(widths_.empty() ? std::move(tokens) : internal::ngrams(tokens, widths_));
  }
  return rows;
}

HostTensor TextVectorization::host_call(const HostTensor& inputs) const {
  const std::vector<std::vector<std::string>> rows = tokenize(inputs);
  const auto n = static_cast<int64_t>(rows.size());
  std::vector<std::vector<int64_t>> ids;
  for (const auto& r : rows) ids.push_back(table_->ids(std::span<const std::string>(r)));
  HostTensor out;
  if (options_.output_mode == "int") {
    int64_t len = 0;
    if (options_.output_sequence_length) len = *options_.output_sequence_length;
    else
      for (const auto& r : ids) len = std::max(len, static_cast<int64_t>(r.size()));
    std::vector<int64_t> v(static_cast<size_t>(n * len), 0);  // 0: the mask id pads
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < std::min<int64_t>(len, static_cast<int64_t>(ids[static_cast<size_t>(r)].size())); ++c)
        v[static_cast<size_t>(r * len + c)] = ids[static_cast<size_t>(r)][static_cast<size_t>(c)];
    out = HostTensor::from_vector<int64_t>({n, len}, v);
  } else {
    out = table_->encode(ids);
  }
  if (inputs.rank() == 0) return out.reshape({out.dims()[1]});
  return out;
}

Dims TextVectorization::compute_output_shape(const Dims& /*input_shape*/) const {
  // Per example (a string, or a [1] of one): one row of ids or of the encoding.
  if (options_.output_mode == "int")
    return {options_.output_sequence_length ? *options_.output_sequence_length : kNoneDim};
  return {table_->has_vocabulary() || options_.pad_to_max_tokens ? table_->depth() : kNoneDim};
}

void TextVectorization::adapt(const HostTensor& data) {
  if (!input_vocabulary_.empty())
    KILN_THROW(ValueError, "[", at(options_), "] cannot adapt a layer given a vocabulary.");
  table_->reset_state();
  table_->update_state(tokenize(data));
  table_->finalize_state();
}

void TextVectorization::adapt(const data::Dataset& dataset, std::optional<int64_t> steps) {
  if (!input_vocabulary_.empty())
    KILN_THROW(ValueError, "[", at(options_), "] cannot adapt a layer given a vocabulary.");
  table_->reset_state();
  data::Iterator it = dataset.iterator();
  for (int64_t step = 0; !steps || step < *steps; ++step) {
    std::optional<data::Element> e = it.next();
    if (!e) break;
    if (e->empty()) KILN_THROW(ValueError, "[", at(options_), "] adapt received an element without components.");
    table_->update_state(tokenize((*e)[0]));
  }
  table_->finalize_state();
}

std::string TextVectorization::config_with(const std::optional<std::vector<std::string>>& vocabulary) const {
  const json lookup = json::parse(IndexLookupLayer<std::string>::config_with(vocabulary));
  json j = internal::base_config(*this);
  j["dtype"] = "string";  // tf.keras 2 rejects any other; Keras 3 writes its float32 policy
  j["max_tokens"] = lookup["max_tokens"];
  j["standardize"] = options_.standardize ? json(*options_.standardize) : json(nullptr);
  j["split"] = options_.split ? json(*options_.split) : json(nullptr);
  if (const auto* n = std::get_if<int64_t>(&options_.ngrams)) j["ngrams"] = *n;
  else if (const auto* list = std::get_if<std::vector<int64_t>>(&options_.ngrams)) j["ngrams"] = *list;
  else j["ngrams"] = nullptr;
  j["output_mode"] = options_.output_mode;
  j["output_sequence_length"] =
      options_.output_sequence_length ? json(*options_.output_sequence_length) : json(nullptr);
  j["pad_to_max_tokens"] = options_.pad_to_max_tokens;
  j["sparse"] = false;
  j["ragged"] = false;
  j["vocabulary"] = lookup["vocabulary"];
  j["idf_weights"] = lookup["idf_weights"];
  j["encoding"] = "utf-8";
  j["vocabulary_size"] = lookup["vocabulary_size"];
  return j.dump();
}

constexpr internal::ConfigKey kTextVectorizationKeys[] = {
    {"max_tokens"}, {"standardize"}, {"split"}, {"ngrams"}, {"output_mode"}, {"output_sequence_length"},
    {"pad_to_max_tokens"}, {"sparse", "false", "Kiln has no sparse tensors"},
    {"ragged", "false", "Kiln has no ragged tensors"}, {"vocabulary"}, {"idf_weights"}, {"encoding"},
    {"vocabulary_size"}};

TextVectorization TextVectorization::from_config(const std::string& config_json) {
  const char* where = "TextVectorization.from_config";
  const json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kTextVectorizationKeys}, "TextVectorization");
  if (j.contains("vocabulary") && j["vocabulary"].is_string())
    KILN_THROW(ConfigError, "[", where, "] vocabulary is a file path (", j["vocabulary"].get<std::string>(),
               "): Kiln reads vocabularies from the config or the .keras archive's assets only.");
  return internal::guarded(where, [&] {
    auto optional_string = [&](const char* key, const char* fallback) -> std::optional<std::string> {
      if (!j.contains(key)) return std::string(fallback);
      if (j[key].is_null()) return std::nullopt;
      return j[key].get<std::string>();
    };
    TextVectorizationOptions o{.standardize = optional_string("standardize", "lower_and_strip_punctuation"),
                               .split = optional_string("split", "whitespace"),
                               .output_mode = j.value("output_mode", "int"),
                               .pad_to_max_tokens = j.value("pad_to_max_tokens", false),
                               .encoding = j.value("encoding", "utf-8"),
                               .input_shape = internal::input_shape_from(j),
                               .name = j.value("name", "")};
    if (j.contains("max_tokens") && !j["max_tokens"].is_null()) o.max_tokens = j["max_tokens"].get<int64_t>();
    if (j.contains("ngrams") && j["ngrams"].is_number_integer()) o.ngrams = j["ngrams"].get<int64_t>();
    else if (j.contains("ngrams") && j["ngrams"].is_array()) o.ngrams = j["ngrams"].get<std::vector<int64_t>>();
    if (j.contains("output_sequence_length") && !j["output_sequence_length"].is_null())
      o.output_sequence_length = j["output_sequence_length"].get<int64_t>();
    if (j.contains("vocabulary") && !j["vocabulary"].is_null())
      o.vocabulary = j["vocabulary"].get<std::vector<std::string>>();
    if (j.contains("idf_weights") && !j["idf_weights"].is_null())
      o.idf_weights = j["idf_weights"].get<std::vector<double>>();
    TextVectorization l(std::move(o));
    l.set_trainable(j.value("trainable", true));
    return l;
  });
}

}  // namespace kiln::keras
