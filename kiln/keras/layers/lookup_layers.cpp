// StringLookup and IntegerLookup: host calls over IndexTable, adapt, configs as Keras writes
// them, and the vocabulary asset Keras 3 keeps in the .keras archive.
#include "kiln/keras/layers/lookup_layers.h"

#include <sstream>

#include "kiln/core/check.h"
#include "kiln/data/iterator.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"

namespace kiln::keras {
namespace {

using nlohmann::json;

// The keys as a vector of Key, from a host tensor of any integer dtype (IntegerLookup) or of
// strings (StringLookup).
template <typename Key>
std::vector<Key> keys_of(const HostTensor& t, const std::string& where) {
  if constexpr (std::is_same_v<Key, std::string>) {
    if (!t.is_string())
      KILN_THROW(DTypeError, "[", where, "] expected string inputs, received ", t.shape(),
                 ". Hint: IntegerLookup looks up integers.");
    return t.to_vector<std::string>();
  } else {
    if (!is_integral(t.dtype()))
      KILN_THROW(DTypeError, "[", where, "] expected integer inputs, received ", t.shape(),
                 ". Hint: StringLookup looks up strings.");
    return t.to_vector<int64_t>();
  }
}

template <typename Key>
HostTensor keys_tensor(Dims dims, const std::vector<Key>& keys) {
  return HostTensor::from_vector<Key>(std::move(dims), keys);
}

template <typename Key>
json key_json(const std::optional<Key>& k) {
  return k ? json(*k) : json(nullptr);
}

template <typename Key>
std::optional<Key> key_from(const json& j, const char* field) {
  if (!j.contains(field) || j[field].is_null()) return std::nullopt;
  return j[field].get<Key>();
}

// The vocabulary of a config: a list, or null; a file path (Keras reads it outside the archive
// only in unsafe mode) is refused.
template <typename Key>
std::vector<Key> vocabulary_from(const json& j, const char* where) {
  if (!j.contains("vocabulary") || j["vocabulary"].is_null()) return {};
  if (j["vocabulary"].is_string())
    KILN_THROW(ConfigError, "[", where, "] vocabulary is a file path (", j["vocabulary"].get<std::string>(),
               "): Kiln reads vocabularies from the config or the .keras archive's assets only.");
  return j["vocabulary"].get<std::vector<Key>>();
}

std::vector<double> idf_from(const json& j) {
  if (!j.contains("idf_weights") || j["idf_weights"].is_null()) return {};
  return j["idf_weights"].get<std::vector<double>>();
}

constexpr internal::ConfigKey kLookupKeys[] = {
    {"invert"}, {"max_tokens"}, {"num_oov_indices"}, {"oov_token"}, {"mask_token"}, {"output_mode"},
    {"sparse", "false", "Kiln has no sparse tensors"}, {"pad_to_max_tokens"}, {"vocabulary_dtype"},
    {"idf_weights"}, {"vocabulary"}, {"vocabulary_size"}, {"encoding"}, {"oov_method"}};

// The options StringLookup and IntegerLookup share, from a config.
template <typename Options, typename Key>
Options lookup_options(const json& j, const std::optional<Key>& default_oov, const char* where) {
  Options o;
  if (j.contains("max_tokens") && !j["max_tokens"].is_null()) o.max_tokens = j["max_tokens"].get<int64_t>();
  o.num_oov_indices = j.value("num_oov_indices", int64_t{1});
  o.mask_token = key_from<Key>(j, "mask_token");
  o.oov_token = j.contains("oov_token") ? key_from<Key>(j, "oov_token") : default_oov;
  o.vocabulary = vocabulary_from<Key>(j, where);
  o.idf_weights = idf_from(j);
  o.invert = j.value("invert", false);
  o.output_mode = j.value("output_mode", "int");
  o.pad_to_max_tokens = j.value("pad_to_max_tokens", false);
  o.input_shape = internal::input_shape_from(j);
  o.name = j.value("name", "");
  return o;
}

// The table's arguments from either layer's options.
template <typename Key, typename Options>
internal::LookupArgs<Key> lookup_args(const Options& o) {
  return {.max_tokens = o.max_tokens,
          .num_oov_indices = o.num_oov_indices,
          .mask_token = o.mask_token,
          .oov_token = o.oov_token,
          .invert = o.invert,
          .output_mode = o.output_mode,
          .pad_to_max_tokens = o.pad_to_max_tokens};
}

}  // namespace

template <typename Key>
IndexLookupLayer<Key>::IndexLookupLayer(internal::LookupArgs<Key> args, std::vector<Key> vocabulary,
                                        std::vector<double> idf_weights, const std::string& name,
                                        const Dims& input_shape, const std::string& class_name)
    : Layer(name, input_shape),
      table_(std::make_shared<internal::IndexTable<Key>>(std::move(args), name.empty() ? class_name : name)),
      input_vocabulary_(std::move(vocabulary)),
      input_idf_weights_(std::move(idf_weights)) {
  if (!input_vocabulary_.empty()) table_->set_vocabulary(input_vocabulary_, input_idf_weights_);
  else if (!input_idf_weights_.empty())
    KILN_THROW(ValueError, "[", name.empty() ? class_name : name, "] idf_weights need a vocabulary.");
}

template <typename Key>
std::string IndexLookupLayer<Key>::where() const {
  return name().empty() ? class_name() : name();
}

template <typename Key>
HostTensor IndexLookupLayer<Key>::host_call(const HostTensor& inputs) const {
  const internal::IndexTable<Key>& t = *table_;
  if (t.args().invert) {
    if (!is_integral(inputs.dtype()))
      KILN_THROW(DTypeError, "[", where(), "] invert=true maps integer ids to tokens, received ", inputs.shape(), ".");
    const std::vector<int64_t> ids = inputs.to_vector<int64_t>();
    return keys_tensor<Key>(inputs.dims(), t.tokens(ids));
  }
  const std::vector<Key> keys = keys_of<Key>(inputs, where());
  const std::vector<int64_t> ids = t.ids(keys);
  const std::string& mode = t.args().output_mode;
  if (mode == "int") return HostTensor::from_vector<int64_t>(inputs.dims(), ids);
  if (mode == "one_hot") {
    std::vector<std::vector<int64_t>> rows;
    for (int64_t id : ids) rows.push_back({id});
    // The per-example rule (a last axis of 1 replaced) with the batch axis in front.
    const Dims& d = inputs.dims();
    if (d.empty()) return t.encode(rows).reshape(compute_output_shape({}));
    Dims shape = compute_output_shape(Dims(d.begin() + 1, d.end()));
    shape.insert(shape.begin(), d[0]);
    return t.encode(rows).reshape(shape);
  }
  if (inputs.rank() > 2)
    KILN_THROW(ShapeError, "[", where(), "] output_mode=\"", mode, "\" takes inputs of rank 0 to 2, received ",
               inputs.shape(), ".");
  if (inputs.rank() < 2) return t.encode({ids}).reshape({t.depth()});
  const int64_t rows = inputs.dims()[0], cols = inputs.dims()[1];
  std::vector<std::vector<int64_t>> per_row(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    per_row[static_cast<size_t>(r)].assign(ids.begin() + r * cols, ids.begin() + (r + 1) * cols);
  return t.encode(per_row);
}

template <typename Key>
Dims IndexLookupLayer<Key>::compute_output_shape(const Dims& input_shape) const {
  const std::string& mode = table_->args().output_mode;
  if (mode == "int") return input_shape;
  const int64_t depth = table_->has_vocabulary() || table_->args().pad_to_max_tokens ? table_->depth() : kNoneDim;
  Dims out = input_shape;
  if (mode == "one_hot") {  // per example: (1,) -> (depth,), as Keras's (None, 1) -> (None, depth)
    if (!out.empty() && out.back() == 1) out.back() = depth;
    else out.push_back(depth);
    return out;
  }
  if (out.empty()) return {depth};
  out.back() = depth;
  return out;
}

template <typename Key>
Tensor IndexLookupLayer<Key>::call(const Tensor& x, bool /*training*/) {
  if (x.is_symbolic())
    KILN_THROW(CompileError, "[", where(), "] ", class_name(), " runs on the host, before the compiled step, but ",
               "here it takes the output of a compiled layer. Hint: map it over the Dataset (ds.map([&](HostTensor t) ",
               "{ return layer(t); })), or put it at the front of the model (right after its input, or after other ",
               "host layers), where fit, evaluate and predict apply it on the host.");
  return Tensor(host_call(x.value()));
}

template <typename Key>
void IndexLookupLayer<Key>::adapt(const HostTensor& data) {
  std::vector<Key> keys = keys_of<Key>(data, where());
  std::vector<std::vector<Key>> docs;
  if (data.rank() <= 1) {
    for (Key& k : keys) docs.push_back({std::move(k)});  // a plain list: one document per entry
  } else {
    const int64_t rows = data.dims()[0];
    const auto cols = static_cast<size_t>(data.num_elements() / std::max<int64_t>(rows, 1));
    for (int64_t r = 0; r < rows; ++r)
      docs.emplace_back(keys.begin() + static_cast<int64_t>(r * static_cast<int64_t>(cols)),
                        keys.begin() + static_cast<int64_t>((r + 1) * static_cast<int64_t>(cols)));
  }
  if (!input_vocabulary_.empty())
    KILN_THROW(ValueError, "[", where(), "] cannot adapt a layer given a vocabulary.");
  table_->reset_state();
  table_->update_state(docs);
  table_->finalize_state();
}

template <typename Key>
void IndexLookupLayer<Key>::adapt(const data::Dataset& dataset, std::optional<int64_t> steps) {
  if (!input_vocabulary_.empty())
    KILN_THROW(ValueError, "[", where(), "] cannot adapt a layer given a vocabulary.");
  table_->reset_state();
  data::Iterator it = dataset.iterator();
  for (int64_t step = 0; !steps || step < *steps; ++step) {
    std::optional<data::Element> e = it.next();
    if (!e) break;
    if (e->empty()) KILN_THROW(ValueError, "[", where(), "] adapt received an element without components.");
    const HostTensor& batch = (*e)[0];
    std::vector<Key> keys = keys_of<Key>(batch, where());
    if (batch.rank() <= 1) {  // one document (Keras expands a rank-1 batch on axis 0)
      table_->update_state({keys});
      continue;
    }
    const int64_t rows = batch.dims()[0];
    const int64_t cols = batch.num_elements() / std::max<int64_t>(rows, 1);
    std::vector<std::vector<Key>> docs;
    for (int64_t r = 0; r < rows; ++r) docs.emplace_back(keys.begin() + r * cols, keys.begin() + (r + 1) * cols);
    table_->update_state(docs);
  }
  table_->finalize_state();
}

template <typename Key>
void IndexLookupLayer<Key>::set_vocabulary(const std::vector<Key>& vocabulary, const std::vector<double>& idf_weights) {
  table_->set_vocabulary(vocabulary, idf_weights);
}

template <typename Key>
std::string IndexLookupLayer<Key>::config_with(const std::optional<std::vector<Key>>& vocabulary) const {
  json j = internal::base_config(*this);
  const internal::LookupArgs<Key>& a = table_->args();
  // tf.keras 2's IndexLookup dtype (its output's), which it checks on load: int64 for ids;
  // Keras 3 writes its float32 policy (keras3_config.cpp).
  j["dtype"] = a.output_mode == "int" ? "int64" : "float32";
  j["invert"] = a.invert;
  j["max_tokens"] = a.max_tokens ? json(*a.max_tokens) : json(nullptr);
  j["num_oov_indices"] = a.num_oov_indices;
  j["oov_token"] = key_json(a.oov_token);
  j["mask_token"] = key_json(a.mask_token);
  j["output_mode"] = a.output_mode;
  j["sparse"] = false;
  j["pad_to_max_tokens"] = a.pad_to_max_tokens;
  j["vocabulary_dtype"] = std::is_same_v<Key, std::string> ? "string" : "int64";
  if (vocabulary) {
    j["vocabulary"] = *vocabulary;
    std::vector<float> idf = table_->idf_weights();
    idf.resize(std::min(idf.size(), vocabulary->size()));  // without pad_to_max_tokens's zeros
    j["idf_weights"] = a.output_mode == "tf_idf" ? json(idf) : json(nullptr);
  } else {
    j["vocabulary"] = input_vocabulary_.empty() ? json(nullptr) : json(input_vocabulary_);
    j["idf_weights"] = input_idf_weights_.empty() ? json(nullptr) : json(input_idf_weights_);
  }
  j["vocabulary_size"] = table_->has_vocabulary() ? json(table_->vocabulary_size()) : json(nullptr);
  if constexpr (std::is_same_v<Key, std::string>) j["encoding"] = "utf-8";
  return j.dump();
}

template <typename Key>
std::string IndexLookupLayer<Key>::get_config_with_vocabulary() const {
  if (!input_vocabulary_.empty() || !table_->has_vocabulary()) return get_config();
  return config_with(table_->vocabulary(/*include_special_tokens=*/true));
}

template <typename Key>
std::optional<std::string> IndexLookupLayer<Key>::vocabulary_asset() const {
  if (!input_vocabulary_.empty() || !table_->has_vocabulary()) return std::nullopt;  // in the config, or none
  std::ostringstream out;
  const std::vector<Key> v = table_->vocabulary(/*include_special_tokens=*/true);
  for (size_t i = 0; i < v.size(); ++i) out << (i ? "\n" : "") << v[i];  // "\n".join, no final newline
  return out.str();
}

template <typename Key>
void IndexLookupLayer<Key>::load_vocabulary_asset(const std::string& text) {
  if (!input_vocabulary_.empty()) return;  // Keras: the config's vocabulary wins
  std::vector<Key> v;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if constexpr (std::is_same_v<Key, std::string>) {
      v.push_back(line);
    } else {
      try {
        v.push_back(std::stoll(line));
      } catch (const std::exception&) {
        KILN_THROW(ConfigError, "[", where(), "] vocabulary.txt holds '", line, "', not an integer.");
      }
    }
  }
  while (!v.empty() && v.back() == Key{} && !std::is_same_v<Key, int64_t>) v.pop_back();  // trailing empty lines
  // tf_idf: the weights are the layer's saved variable, already full length.
  const std::vector<float> idf = table_->idf_weights();
  table_->set_vocabulary(v, table_->args().output_mode == "tf_idf" ? std::vector<double>(idf.begin(), idf.end())
                                                                   : std::vector<double>{});
}

namespace {

/// StringLookup's and IntegerLookup's from_config after their own key checks: Keras's lookup
/// options, the class's own ones (`own`), then the layer with its trainable flag.
template <class L, class Options, class Key, class Own>
L lookup_from_config(const json& j, Key oov_token, const char* where, Own own) {
  return internal::guarded(where, [&] {
    Options o = lookup_options<Options, Key>(j, std::move(oov_token), where);
    own(o);
    L l(std::move(o));
    l.set_trainable(j.value("trainable", true));
    return l;
  });
}

}  // namespace

template class IndexLookupLayer<std::string>;
template class IndexLookupLayer<int64_t>;

StringLookup::StringLookup(StringLookupOptions o)
    : IndexLookupLayer<std::string>(lookup_args<std::string>(o), o.vocabulary, o.idf_weights, o.name, o.input_shape,
                                    "StringLookup") {
  if (o.sparse) KILN_THROW(ValueError, "[StringLookup] sparse=true is not built: Kiln has no sparse tensors.");
  if (o.encoding != "utf-8" && o.encoding != "UTF-8")
    KILN_THROW(ValueError, "[StringLookup] Kiln compares UTF-8 bytes: encoding must be \"utf-8\", received \"",
               o.encoding, "\".");
}

StringLookup StringLookup::from_config(const std::string& config_json) {
  const char* where = "StringLookup.from_config";
  const json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kLookupKeys}, "StringLookup");
  return lookup_from_config<StringLookup, StringLookupOptions>(
      j, std::string("[UNK]"), where, [&](StringLookupOptions& o) { o.encoding = j.value("encoding", "utf-8"); });
}

IntegerLookup::IntegerLookup(IntegerLookupOptions o)
    : IndexLookupLayer<int64_t>(lookup_args<int64_t>(o), o.vocabulary, o.idf_weights, o.name, o.input_shape,
                                "IntegerLookup") {
  if (o.sparse) KILN_THROW(ValueError, "[IntegerLookup] sparse=true is not built: Kiln has no sparse tensors.");
  if (o.vocabulary_dtype != "int64")
    KILN_THROW(ValueError, "[IntegerLookup] Kiln looks up int64 keys: vocabulary_dtype must be \"int64\", received \"",
               o.vocabulary_dtype, "\".");
}

IntegerLookup IntegerLookup::from_config(const std::string& config_json) {
  const char* where = "IntegerLookup.from_config";
  const json j = internal::parse(config_json, where);
  internal::expect_layer_keys(j, {kLookupKeys}, "IntegerLookup");
  if (j.contains("oov_method") && j["oov_method"] != "floormod")
    KILN_THROW(ConfigError, "[", where, "] oov_method ", j["oov_method"].dump(), " is not built (Kiln: floormod).");
  return lookup_from_config<IntegerLookup, IntegerLookupOptions>(
      j, int64_t{-1}, where, [&](IntegerLookupOptions& o) { o.vocabulary_dtype = j.value("vocabulary_dtype", "int64"); });
}

}  // namespace kiln::keras
