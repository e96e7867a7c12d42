// The .keras archive and Keras 3 .weights.h5 files. The weights file is built (or, when
// read, unpacked) as a temporary HDF5 file, because io::Hdf5File works on paths; the archive
// is assembled in memory and written atomically.
#include "kiln/keras/saving/keras_archive.h"

#include <algorithm>
#include <ctime>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/core/logging.h"
#include "kiln/io/atomic_file.h"
#include "kiln/io/file_reader.h"
#include "kiln/io/hdf5_file.h"
#include "kiln/io/zip_archive.h"
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
  return d == DType::kBF16 || d == DType::kF16 ? v.storage().astype(DType::kF32) : v.storage().clone();
}

// H5IOStore's entry: <path>/vars with the owner's name (a str attribute, as h5py writes it)
// and its variables as datasets "0", "1", ...
void write_vars(Hdf5Group& root, const std::string& path, const std::string& owner,
                const std::vector<Variable>& vars) {
  Hdf5Group g = root.create_group(path.empty() ? "vars" : path + "/vars");
  g.write_string_attribute("name", owner, io::StringKind::kVariableUtf8);
  for (size_t i = 0; i < vars.size(); ++i) g.write_dataset(std::to_string(i), saved_value(vars[i]));
}

// _save_state's walk for Sequential and Functional models: the layers, the model's own
// (empty) vars, then the optimizer.
void write_weights(Hdf5Group& root, const Model& model, bool with_optimizer, const std::string& path) {
  const std::vector<std::string> paths = internal::keras3_layer_paths(model);
  for (size_t i = 0; i < paths.size(); ++i) {
    const Layer& layer = *model.layers()[i];
    // Keras 3 keeps its state in four EinsumDense sublayers' groups, not in its own vars.
    if (layer.class_name() == "MultiHeadAttention")
      KILN_THROW(IOError, "[", path, "] layer '", layer.name(), "' is a MultiHeadAttention, whose Keras 3 "
                 "weights layout Kiln does not write yet. Hint: save the model as .h5 or as a model directory.");
    write_vars(root, paths[i], layer.name(), internal::saved_weights(layer));
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

// A member unpacked to a temporary file for libhdf5, removed when this goes.
class UnpackedMember {
 public:
  UnpackedMember(const io::ZipReader& zip, const std::string& member) {
    const std::string bytes = zip.read(member);
    path_ = (fs::temp_directory_path() / io::unique_name("kiln-keras-weights-")).string() + ".h5";
    io::write_file_atomically(path_, bytes);
  }
  ~UnpackedMember() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  UnpackedMember(const UnpackedMember&) = delete;
  UnpackedMember& operator=(const UnpackedMember&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
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
  const std::vector<std::string> children = g.children();
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
  const std::vector<std::string> paths = internal::keras3_layer_paths(model);
  std::vector<Variable> vars;
  std::vector<HostTensor> values;
  std::vector<std::string> where;
  for (size_t i = 0; i < paths.size(); ++i) {
    const Layer& layer = *model.layers()[i];
    const std::vector<Variable> weights = internal::saved_weights(layer);
    std::string group;
    if (!find_vars(root, paths[i], &group)) {
      if (weights.empty()) continue;  // newer Keras writes no group for a layer without state
      KILN_THROW(IOError, "[", file, "] has no group /", paths[i], "/vars for layer '", layer.name(), "' (",
                 layer.class_name(), ", ", weights.size(), " weights). Hint: load into the architecture that was "
                 "saved.");
    }
    std::vector<HostTensor> stored = read_vars(root, group, file);
    if (stored.size() != weights.size())
      KILN_THROW(IOError, "[", file, "] /", group, " holds ", stored.size(), " variables, but layer '", layer.name(),
                 "' (", layer.class_name(), ") has ", weights.size(), ". Hint: load into the architecture that was "
                 "saved.");
    for (size_t k = 0; k < weights.size(); ++k) {
      vars.push_back(weights[k]);
      values.push_back(std::move(stored[k]));
      where.push_back(str_cat("/", group, "/", k));
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
// name the archive member rather than the temporary file.
template <typename Read>
void read_weights_member(const io::ZipReader& zip, Read read) {
  const UnpackedMember weights(zip, kKerasWeightsMember);
  const std::string where = zip.path() + ":" + kKerasWeightsMember;
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
  std::vector<io::ZipMember> members;
  members.push_back({kKerasMetadataMember, json({{"keras_version", kKeras3Version}, {"date_saved", date_saved()}}).dump()});
  members.push_back({kKerasConfigMember, internal::keras3_config_json(model, with_optimizer)});
  members.push_back({kKerasWeightsMember, h5_bytes(path, [&](Hdf5Group& root) {
                       write_weights(root, model, with_optimizer, path);
                     })});
  io::write_zip_atomically(path, members);
}

std::unique_ptr<Model> load_model_keras(const std::string& path, const LoadOptions& options) {
  const io::ZipReader zip = io::ZipReader::open(path);
  std::string version = "(unknown: no metadata.json)";
  if (zip.contains(kKerasMetadataMember)) {
    const json meta = json::parse(zip.read(kKerasMetadataMember), nullptr, /*allow_exceptions=*/false);
    if (meta.is_object() && meta.contains("keras_version") && meta["keras_version"].is_string())
      version = meta["keras_version"].get<std::string>();
  }
  if (!zip.contains(kKerasWeightsMember))
    KILN_THROW(IOError, "[", path, "] has no member '", kKerasWeightsMember, "'",
               zip.contains("model.weights.npz") ? " (its weights are model.weights.npz)" : "",
               ". Hint: Kiln reads the h5 weights format; save with weights_format=\"h5\" (Keras's default).");
  const internal::Keras2Configs configs =
      internal::keras2_configs_from_keras3(zip.read(kKerasConfigMember), path, version, options);
  const std::string where = path + ":" + kKerasConfigMember;
  std::unique_ptr<Model> model = internal::model_from_config(
      configs.model_config, internal::ConfigSource{where, version, &options.custom_objects});
  read_weights_member(zip, [&](const Hdf5Group& root, const std::string& weights_where) {
    read_weights(root, *model, weights_where);
    if (!configs.training_config.empty()) {
      internal::compile_from_training_config(*model, configs.training_config, where, version);
      read_optimizer(root, *model, weights_where);
    }
  });
  return model;
}

void save_weights_keras3(const Model& model, const std::string& path) {
  const std::string bytes = h5_bytes(path, [&](Hdf5Group& root) {
    write_weights(root, model, model.is_compiled(), path);
  });
  io::write_file_atomically(path, bytes);
}

void load_weights_keras3(Model& model, const std::string& path, LoadWeightsOptions options) {
  if (options.by_name)
    KILN_THROW(ValueError, "[load_weights] by_name is not supported for Keras 3 weights (", path,
               "): they are matched by position, as in Keras 3. Hint: load into the architecture that was saved.");
  if (is_keras_archive_path(path)) {
    read_weights_member(io::ZipReader::open(path),
                        [&](const Hdf5Group& root, const std::string& where) { read_weights(root, model, where); });
    return;
  }
  Hdf5File file = Hdf5File::open(path);
  read_weights(file.root(), model, path);
}

}  // namespace kiln::keras
