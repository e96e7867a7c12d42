// The .keras archive and Keras 3 .weights.h5 files. The weights file is built (or, when
// read, unpacked) as a temporary HDF5 file, because io::Hdf5File works on paths; the archive
// is assembled in memory and written atomically.
#include "kiln/keras/saving/keras_archive.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/core/logging.h"
#include "kiln/io/atomic_file.h"
#include "kiln/io/file_reader.h"
#include "kiln/io/hdf5_file.h"
#include "kiln/io/scratch_file.h"
#include "kiln/io/zip_archive.h"
#include "kiln/keras/layers/host_layer.h"
#include "kiln/keras/layers/wrappers.h"
#include "kiln/keras/models/model_layer.h"
#include "kiln/keras/optimizers/nadam.h"
#include "kiln/keras/saving/keras3_config_impl.h"
#include "kiln/keras/saving/saving_impl.h"

namespace kiln::keras {
namespace {

namespace fs = std::filesystem;
using io::Hdf5File;
using io::Hdf5Group;
using nlohmann::json;

bool ends_with_lower(const std::string& path, const std::string& suffix) {
  std::string lower = path;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.size() > suffix.size() && lower.ends_with(suffix);
}

HostTensor saved_value(const Variable& v) {
  const DType d = v.dtype();  // Kiln keeps f32 on disk for its 16-bit variables
  return d == DType::kBF16 || d == DType::kF16 ? v.host_value().astype(DType::kF32) : v.host_value().clone();
}

// H5IOStore's entry: <path>/vars with the owner's name (a str attribute, as h5py writes it)
// and its variables as datasets "0", "1", ...
void write_vars(Hdf5Group& root, const std::string& path, const std::string& owner,
                const std::vector<Variable>& vars) {
  Hdf5Group g = root.create_group(path.empty() ? "vars" : path + "/vars");
  g.write_string_attribute("name", owner, io::StringKind::kVariableUtf8);
  for (size_t i = 0; i < vars.size(); ++i) g.write_dataset(std::to_string(i), saved_value(vars[i]));
}

// A sublayer that holds part of a layer's Keras 3 state, in the group <layer path>/<attribute>.
struct Sublayer {
  std::vector<std::string> attributes;  // the first is where Keras 3.1+ writes it; then older names
  std::string name;                     // its Keras layer name (the vars group's name attribute)
  std::vector<Variable> vars;
};

std::vector<Sublayer> keras3_sublayers(const Layer& layer);

// Keras 3's recurrent layers keep their weights in their cell (keras/src/layers/rnn/rnn.py:
// self.cell, named "<snake class>_cell"): <path>/cell/vars, kernel, recurrent_kernel, bias as
// Keras 2 orders them. Bidirectional's two layers are its forward_layer and backward_layer
// attributes (each an RNN with a cell); TimeDistributed's inner layer is its `layer`.
std::vector<Sublayer> recurrent_sublayers(const Layer& layer) {
  const std::string cls = layer.class_name();
  if (cls == "SimpleRNN" || cls == "LSTM" || cls == "GRU")
    return {{{"cell"}, to_snake_case(cls) + "_cell", internal::saved_weights(layer)}};
  std::vector<Sublayer> out;
  auto nest = [&](const std::string& attribute, const Layer& inner) {
    const std::vector<Sublayer> parts = keras3_sublayers(inner);
    if (parts.empty()) out.push_back({{attribute}, inner.name(), internal::saved_weights(inner)});
    else out.push_back({{attribute}, inner.name(), {}});
    for (const Sublayer& p : parts) out.push_back({{attribute + "/" + p.attributes[0]}, p.name, p.vars});
  };
  if (const auto* bi = dynamic_cast<const Bidirectional*>(&layer)) {
    nest("backward_layer", bi->backward_layer());  // _walk_saveable's sorted attribute order
    nest("forward_layer", bi->forward_layer());
  } else if (const auto* td = dynamic_cast<const TimeDistributed*>(&layer)) {
    nest("layer", td->layer());
  }
  return out;
}

// Keras 3's MultiHeadAttention has no variables of its own: its four EinsumDense projections
// (kernel, then bias unless use_bias=False) and its Softmax and Dropout are sublayers, which
// _save_state reaches by attribute, public ones first (keras/src/saving/saving_lib.py
// _walk_saveable, sorted with _name_key since 3.1): the query_dense, key_dense, value_dense and
// output_dense properties (3.1+), then _dropout_layer and _softmax. Keras 3.0, before those
// properties, wrote _query_dense, ... (and Keras 2.13-2.15's .keras format too), which Keras
// 3.1+ still reads. Listed in that walk order. Recurrent layers and wrappers: recurrent_sublayers;
// empty for every other layer.
std::vector<Sublayer> keras3_sublayers(const Layer& layer) {
  if (layer.class_name() != "MultiHeadAttention") return recurrent_sublayers(layer);
  const std::vector<Variable> weights = internal::saved_weights(layer);
  auto vars_of = [&](const std::string& projection) {
    std::vector<Variable> out;
    for (const char* kind : {"kernel", "bias"})
      for (const Variable& v : weights)
        if (v.name().ends_with("/" + projection + "/" + kind)) out.push_back(v);
    return out;
  };
  std::vector<Sublayer> out = {
      {{"key_dense", "_key_dense"}, "key", vars_of("key")},
      {{"output_dense", "_output_dense"}, "attention_output", vars_of("attention_output")},
      {{"query_dense", "_query_dense"}, "query", vars_of("query")},
      {{"value_dense", "_value_dense"}, "value", vars_of("value")},
      {{"_dropout_layer"}, "dropout", {}},
      {{"_softmax"}, "softmax", {}},
  };
  size_t mapped = 0;
  for (const Sublayer& s : out) mapped += s.vars.size();
  KILN_CHECK(mapped == weights.size(), "every MultiHeadAttention weight of '", layer.name(), "' has a sublayer");
  return out;
}

// Every layer of `model` that holds its own variables, with its weight-store path: a nested
// model's layers are under its path (Keras 3 walks a nested model as any layer: its own empty
// vars at layers/sequential/vars, its layers at layers/sequential/layers/dense/vars).
struct StoredLayer {
  std::string path;
  const Layer* layer;
  bool nested_model;
};
void stored_layers(const Model& model, const std::string& prefix, std::vector<StoredLayer>& out) {
  const std::vector<std::string> paths = internal::keras3_layer_paths(model);
  for (size_t i = 0; i < paths.size(); ++i) {
    const Layer& layer = *model.layers()[i];
    const std::string path = prefix.empty() ? paths[i] : prefix + "/" + paths[i];
    const auto* nested = dynamic_cast<const ModelLayer*>(&layer);
    out.push_back({path, &layer, nested != nullptr});
    if (nested != nullptr) stored_layers(nested->model(), path, out);
  }
}

// Where Keras 3 keeps a host layer's state (IndexLookup's save_own_variables and save_assets):
// its own path, and for TextVectorization also its StringLookup, the `_lookup_layer` attribute
// _save_state walks into (TextVectorization delegates to it, so both hold the same).
std::vector<std::string> host_state_paths(const Layer& layer, const std::string& path) {
  if (layer.class_name() == "TextVectorization") return {path, path + "/_lookup_layer"};
  return {path};
}

// A tf_idf layer's "idf_weights" entry beside its (no) numbered variables.
void write_idf_weights(Hdf5Group& root, const StoredLayer& entry) {
  const auto* host = dynamic_cast<const HostLayer*>(entry.layer);
  if (host == nullptr) return;
  const std::vector<float> idf = host->saved_idf_weights();
  const std::vector<std::string> paths = host_state_paths(*entry.layer, entry.path);
  for (size_t i = 0; i < paths.size(); ++i) {
    if (i > 0) write_vars(root, paths[i], "string_lookup", {});
    if (!idf.empty())
      root.open_group(paths[i] + "/vars")
          .write_dataset("idf_weights", HostTensor::from_vector<float>({static_cast<int64_t>(idf.size())}, idf));
  }
}

// _save_state's walk for Sequential and Functional models: the layers (a layer's own vars,
// then its sublayers'), the model's own (empty) vars, then the optimizer.
void write_weights(Hdf5Group& root, const Model& model, bool with_optimizer) {
  std::vector<StoredLayer> layers;
  stored_layers(model, "", layers);
  for (const StoredLayer& entry : layers) {
    const Layer& layer = *entry.layer;
    const std::vector<Sublayer> sublayers = keras3_sublayers(layer);
    const bool own = sublayers.empty() && !entry.nested_model;
    write_vars(root, entry.path, layer.name(), own ? internal::saved_weights(layer) : std::vector<Variable>{});
    write_idf_weights(root, entry);
    for (const Sublayer& s : sublayers) write_vars(root, entry.path + "/" + s.attributes[0], s.name, s.vars);
  }
  write_vars(root, "", model.name(), {});
  if (with_optimizer)
    write_vars(root, "optimizer", model.optimizer()->name(), internal::keras3_optimizer_variables(*model.optimizer()));
}

// The bytes of a weights file written at a scratch sibling of `path` (removed afterwards).
template <typename Fill>
std::string h5_bytes(const std::string& path, Fill fill) {
  io::AtomicFileWriter scratch(path + ".weights-h5");  // never committed: only its temp file is used
  {
    Hdf5File file = Hdf5File::create(scratch.temp_path());
    fill(file.root());
    file.flush();
  }
  return io::read_file(scratch.temp_path());
}

// The members of a .keras archive, or of the directory that Keras 3.6+'s
// save_model(model, path, zipped=False) writes (the same members as files).
class KerasMembers {
 public:
  explicit KerasMembers(std::string path) : path_(std::move(path)) {
    std::error_code ec;
    if (!fs::is_directory(path_, ec)) zip_.emplace(io::ZipReader::open(path_));
  }
  const std::string& path() const { return path_; }
  bool is_directory() const { return !zip_.has_value(); }
  bool contains(const std::string& member) const {
    std::error_code ec;
    return zip_ ? zip_->contains(member) : fs::is_regular_file(fs::path(path_) / member, ec);
  }
  std::string read(const std::string& member) const {
    if (zip_) return zip_->read(member);
    if (!contains(member))
      KILN_THROW(IOError, "[", path_, "] has no member '", member, "' (a directory Keras 3 wrote with zipped=False "
                 "holds config.json, metadata.json and model.weights.h5). Hint: copy the whole directory.");
    return io::read_file(file(member));
  }
  /// A directory member's file.
  std::string file(const std::string& member) const { return (fs::path(path_) / member).string(); }
  /// How messages name a member: "m.keras:model.weights.h5", or the directory's file.
  std::string where(const std::string& member) const { return zip_ ? path_ + ":" + member : file(member); }

 private:
  std::string path_;
  std::optional<io::ZipReader> zip_;
};

// The vars group of `path`, also under Keras 2.13-2.15's _layer_checkpoint_dependencies.
bool find_vars(const Hdf5Group& root, std::string path, std::string* found) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const std::string vars = path.empty() ? "vars" : path + "/vars";
    if (root.has_group(vars)) {
      *found = vars;
      return true;
    }
    if (!root.has_group("_layer_checkpoint_dependencies") || !path.starts_with("layers/")) return false;
    path = "_layer_checkpoint_dependencies/" + path.substr(7);
  }
  return false;
}

// The datasets "0".."n-1" of a vars group (h5py lists them by name: "10" before "2").
std::vector<HostTensor> read_vars(const Hdf5Group& root, const std::string& vars, const std::string& file) {
  Hdf5Group g = root.open_group(vars);
  std::vector<std::string> children = g.children();
  std::erase(children, "idf_weights");  // a lookup layer's named entry (read_host_state)
  std::vector<HostTensor> out;
  for (size_t i = 0; i < children.size(); ++i) {
    if (!g.has_dataset(std::to_string(i)))
      KILN_THROW(IOError, "[", file, "] /", vars, " lacks dataset '", i, "' (it holds ", children.size(),
                 " entries). Hint: the file is damaged; save the model again.");
    out.push_back(g.read_dataset(std::to_string(i)));
  }
  return out;
}

// Layer by layer, by position, as Keras 3's _load_state; assigns only once all are checked.
void read_weights(const Hdf5Group& root, Model& model, const std::string& file) {
  std::vector<Variable> vars;
  std::vector<HostTensor> values;
  std::vector<std::string> where;
  // The vars group at one of `candidates` (paths) into `weights`, owned by `owner`.
  auto read_group = [&](const std::vector<std::string>& candidates, const std::vector<Variable>& weights,
                        const std::string& owner) {
    std::string group;
    const auto found = std::find_if(candidates.begin(), candidates.end(),
                                    [&](const std::string& c) { return find_vars(root, c, &group); });
    if (found == candidates.end()) {
      if (weights.empty()) return;  // newer Keras writes no group for a layer without state
      KILN_THROW(IOError, "[", file, "] has no group /", candidates[0], "/vars for ", owner, " (", weights.size(),
                 " weights)", candidates.size() > 1 ? " nor /" + candidates[1] + "/vars" : std::string(),
                 ". Hint: load into the architecture that was saved.");
    }
    std::vector<HostTensor> stored = read_vars(root, group, file);
    if (stored.size() != weights.size())
      KILN_THROW(IOError, "[", file, "] /", group, " holds ", stored.size(), " variables, but ", owner, " has ",
                 weights.size(), ". Hint: load into the architecture that was saved.");
    for (size_t k = 0; k < weights.size(); ++k) {
      vars.push_back(weights[k]);
      values.push_back(std::move(stored[k]));
      where.push_back(str_cat("/", group, "/", k));
    }
  };
  std::vector<StoredLayer> layers;
  stored_layers(model, "", layers);
  for (const StoredLayer& entry : layers) {
    const Layer& layer = *entry.layer;
    const std::string owner = str_cat("layer '", layer.name(), "' (", layer.class_name(), ")");
    if (entry.nested_model) continue;  // its own vars are empty; its layers follow
    if (const auto* host = dynamic_cast<const HostLayer*>(&layer)) {
      std::string group;
      if (find_vars(root, entry.path, &group) && root.open_group(group).has_dataset("idf_weights"))
        const_cast<HostLayer*>(host)->load_idf_weights(root.open_group(group).read_dataset("idf_weights").to_vector<float>());
    }
    const std::vector<Sublayer> sublayers = keras3_sublayers(layer);
    if (sublayers.empty()) {
      read_group({entry.path}, internal::saved_weights(layer), owner);
      continue;
    }
    for (const Sublayer& s : sublayers) {
      std::vector<std::string> candidates;
      for (const std::string& attribute : s.attributes) candidates.push_back(entry.path + "/" + attribute);
      read_group(candidates, s.vars, str_cat(owner, "'s ", s.name, " projection"));
    }
  }
  internal::assign_checked(vars, values, file, where);
}

// Optimizer::load_own_variables: all of them by position; a file from an optimizer that had
// not yet been built holds only iterations and the learning rate; any other count is skipped
// with Keras's warning, leaving a fresh optimizer.
void read_optimizer(const Hdf5Group& root, Model& model, const std::string& file) {
  std::string group;
  if (!find_vars(root, "optimizer", &group)) return;
  Optimizer& optimizer = *model.optimizer();
  optimizer.create_slots(model.trainable_weights());
  std::vector<Variable> expected = internal::keras3_optimizer_variables(optimizer);
  std::vector<HostTensor> stored = read_vars(root, group, file);
  const size_t head = expected.size() - (optimizer.variables().size() - 2);  // iterations [+ learning rate]
  if (stored.size() == head) {
    expected.resize(head);
  } else if (stored.size() != expected.size()) {
    log(LogLevel::kWarning, str_cat("[", file, "] skipping the optimizer state: optimizer '", optimizer.name(),
                                    "' has ", expected.size(), " variables, the file's ", stored.size(),
                                    "; training continues with a fresh optimizer."));
    return;
  }
  std::vector<std::string> where;
  for (size_t k = 0; k < expected.size(); ++k) where.push_back(str_cat("/", group, "/", k));
  internal::assign_checked(expected, stored, file, where);
}

// Runs `read` on the archive's model.weights.h5 (unpacked for libhdf5), whose errors then
// name the archive member rather than the temporary file; a directory's is read in place.
template <typename Read>
void read_weights_member(const KerasMembers& members, Read read) {
  const std::string where = members.where(kKerasWeightsMember);
  if (members.is_directory()) {
    if (!members.contains(kKerasWeightsMember)) members.read(kKerasWeightsMember);  // names what is missing
    Hdf5File file = Hdf5File::open(where);
    read(file.root(), where);
    return;
  }
  const io::ScratchFile weights(members.read(kKerasWeightsMember), "kiln-keras-weights-", ".h5");
  try {
    Hdf5File file = Hdf5File::open(weights.path());
    read(file.root(), where);
  } catch (const IOError& e) {
    std::string what = e.what();
    for (size_t at; (at = what.find(weights.path())) != std::string::npos;)
      what.replace(at, weights.path().size(), where);
    KILN_THROW(IOError, what);
  }
}

std::string date_saved() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d@%H:%M:%S", &tm);
  return text;
}

}  // namespace

bool is_keras_archive_path(const std::string& path) { return ends_with_lower(path, ".keras"); }
bool is_keras3_weights_path(const std::string& path) { return ends_with_lower(path, ".weights.h5"); }

bool is_keras3_weights_file(const std::string& path) {
  try {
    const Hdf5File file = Hdf5File::open(path);
    return !file.root().has_keras_string_list("layer_names") && !file.root().has_group("model_weights");
  } catch (const IOError&) {
    return false;  // the Keras 2 reader names the problem
  }
}

void save_model_keras(const Model& model, const std::string& path, SaveOptions options) {
  const bool with_optimizer = options.include_optimizer && model.is_compiled();
  // Keras 3 has only the 0.96^t Nadam: writing the legacy one as it would change its updates.
  if (const auto* nadam = with_optimizer ? dynamic_cast<const Nadam*>(model.optimizer()) : nullptr;
      nadam != nullptr && nadam->schedule_decay())
    KILN_THROW(IOError, "[", path, "] optimizer '", nadam->name(), "' is the legacy Nadam (schedule_decay=",
               *nadam->schedule_decay(), "), which Keras 3 does not have. Hint: save as .h5 (tf.keras's legacy "
               "Nadam) or as a model directory, or save with include_optimizer=false, or compile with Nadam() "
               "(Keras 3's momentum schedule) first.");
  std::vector<io::ZipMember> members;
  members.push_back({kKerasMetadataMember, json({{"keras_version", kKeras3Version}, {"date_saved", date_saved()}}).dump()});
  members.push_back({kKerasConfigMember, internal::keras3_config_json(model, with_optimizer)});
  members.push_back({kKerasWeightsMember, h5_bytes(path, [&](Hdf5Group& root) {
                       write_weights(root, model, with_optimizer);
                     })});
  // Keras 3's assets: an adapted vocabulary at assets/<layer path>/vocabulary.txt.
  std::vector<StoredLayer> layers;
  stored_layers(model, "", layers);
  for (const StoredLayer& entry : layers)
    if (const auto* host = dynamic_cast<const HostLayer*>(entry.layer))
      if (const std::optional<std::string> vocabulary = host->vocabulary_asset())
        for (const std::string& p : host_state_paths(*entry.layer, entry.path))
          members.push_back({"assets/" + p + "/vocabulary.txt", *vocabulary});
  io::write_zip_atomically(path, members);
}

bool is_keras_directory(const std::string& path) {
  std::error_code ec;
  const fs::path dir(path);
  return fs::is_directory(dir, ec) && fs::is_regular_file(dir / kKerasConfigMember, ec) &&
         !fs::exists(dir / "model.json", ec);
}

std::unique_ptr<Model> load_model_keras(const std::string& path, const LoadOptions& options) {
  const KerasMembers zip(path);
  std::string version = "(unknown: no metadata.json)";
  if (zip.contains(kKerasMetadataMember)) {
    const json meta = json::parse(zip.read(kKerasMetadataMember), nullptr, /*allow_exceptions=*/false);
    if (meta.is_object() && meta.contains("keras_version") && meta["keras_version"].is_string())
      version = meta["keras_version"].get<std::string>();
  }
  if (!zip.contains(kKerasWeightsMember))
    KILN_THROW(IOError, "[", path, "] has no member '", kKerasWeightsMember, "'",
               zip.contains("model.weights.npz") ? " (its weights are model.weights.npz, which only Keras 3's internal "
                                                   "saving_lib.save_model(..., weights_format=\"npz\") writes)"
                                                 : "",
               ". Hint: Kiln reads model.weights.h5, which model.save and keras.saving.save_model write in every Keras "
               "3 release; load the model in Keras and save it again with model.save(path).");
  const internal::Keras2Configs configs =
      internal::keras2_configs_from_keras3(zip.read(kKerasConfigMember), path, version, options);
  const std::string where = zip.where(kKerasConfigMember);
  std::unique_ptr<Model> model = internal::model_from_config(
      configs.model_config, internal::ConfigSource{where, version, &options.custom_objects});
  read_weights_member(zip, [&](const Hdf5Group& root, const std::string& weights_where) {
    read_weights(root, *model, weights_where);
    if (!configs.training_config.empty()) {
      internal::compile_from_training_config(*model, configs.training_config, where, version);
      read_optimizer(root, *model, weights_where);
    }
  });
  // After the weights: a tf_idf vocabulary takes the idf weights read there.
  std::vector<StoredLayer> layers;
  stored_layers(*model, "", layers);
  for (const StoredLayer& entry : layers) {
    const auto* host = dynamic_cast<const HostLayer*>(entry.layer);
    const std::string member = "assets/" + entry.path + "/vocabulary.txt";
    if (host != nullptr && zip.contains(member)) const_cast<HostLayer*>(host)->load_vocabulary_asset(zip.read(member));
  }
  return model;
}

void save_weights_keras3(const Model& model, const std::string& path) {
  const std::string bytes = h5_bytes(path, [&](Hdf5Group& root) {
    write_weights(root, model, model.is_compiled());
  });
  io::write_file_atomically(path, bytes);
}

void load_weights_keras3(Model& model, const std::string& path, LoadWeightsOptions options) {
  if (options.by_name)
    KILN_THROW(ValueError, "[load_weights] by_name is not supported for Keras 3 weights (", path,
               "): they are matched by position, as in Keras 3. Hint: load into the architecture that was saved.");
  if (is_keras_archive_path(path) || is_keras_directory(path)) {
    read_weights_member(KerasMembers(path),
                        [&](const Hdf5Group& root, const std::string& where) { read_weights(root, model, where); });
    return;
  }
  Hdf5File file = Hdf5File::open(path);
  read_weights(file.root(), model, path);
}

}  // namespace kiln::keras
