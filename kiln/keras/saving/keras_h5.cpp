// The Keras 2 HDF5 model and weights files. tf.keras 2.x's encodings are kept: root
// keras_version/backend as variable-length UTF-8 (Python str), model_config/training_config
// and the weights group's backend/keras_version as variable-length ASCII (Python bytes), and
// layer_names/weight_names as fixed-length 'S' arrays split past 64512 bytes.
#include "kiln/keras/saving/keras_h5.h"

#include <algorithm>

#include "kiln/core/check.h"
#include "kiln/core/logging.h"
#include "kiln/io/atomic_file.h"
#include "kiln/io/hdf5_file.h"
#include <nlohmann/json.hpp>

#include "kiln/keras/layers/host_layer.h"
#include "kiln/keras/models/model_layer.h"
#include "kiln/keras/saving/keras3_config_impl.h"
#include "kiln/keras/saving/saving_impl.h"
#include "kiln/keras/saving/training_config.h"

namespace kiln::keras {
namespace {

using io::Hdf5File;
using io::Hdf5Group;
using io::StringKind;

constexpr const char* kBackend = "tensorflow";

// What h5py stores for a Python str (root keras_version/backend) and for bytes (the JSON
// configs and the weights group's copies); Keras's readers accept either, and fixed length.
constexpr StringKind kStrKind = StringKind::kVariableUtf8;
constexpr StringKind kBytesKind = StringKind::kVariableAscii;

// libhdf5 writes in place, in many places: build the file as AtomicFileWriter's temporary
// sibling (which also reports an unwritable directory as such), then commit it over `path`.
template <typename Fill>
void write_h5_atomically(const std::string& path, Fill fill) {
  io::AtomicFileWriter writer(path);
  {
    Hdf5File file = Hdf5File::create(writer.temp_path());
    fill(file.root());
    file.flush();
  }
  writer.commit();  // fsync reaches libhdf5's writes too: it syncs the file, not the descriptor
}

HostTensor saved_value(const Variable& v) {
  // tf.keras never stores bf16/f16 variables (mixed precision keeps f32 ones).
  const DType d = v.dtype();
  return d == DType::kBF16 || d == DType::kF16 ? v.host_value().astype(DType::kF32) : v.host_value().clone();
}

// A layer's weights in Keras's saved order with the names it stores them under: the
// variable's ("dense/kernel"), or for a nested model the path through its inner models
// ("model1/Conv1/kernel"), since two inner models may hold layers of one name.
std::vector<std::pair<std::string, Variable>> saved_weight_names(const Layer& layer) {
  if (const auto* nested = dynamic_cast<const ModelLayer*>(&layer)) return nested->weight_paths();
  std::vector<std::pair<std::string, Variable>> out;
  for (const Variable& w : internal::saved_weights(layer)) out.emplace_back(w.name(), w);
  return out;
}

// "a/b/c:0" -> {"a", "b", "c"}: a weight name's components, without TensorFlow's ":0".
std::vector<std::string> name_parts(std::string name) {
  if (name.ends_with(":0")) name.resize(name.size() - 2);
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t slash = name.find('/', start);
    parts.push_back(name.substr(start, slash - start));
    if (slash == std::string::npos) return parts;
    start = slash + 1;
  }
}

// For each weight of a nested model, the index of the file's weight name it is: the one that
// shares the longest run of trailing components with its path, at least its layer and weight
// names. Keras's writers differ in how much of the path they store ("Conv1/kernel:0" in tf.keras
// 2, the outer models' names too in Keras 3's legacy .h5), and a nested model lists its
// weights in an order of its own (trainable first, BatchNormalization's statistics last; a
// frozen model by layer), so matching by position would load wrong values silently.
std::vector<size_t> match_by_name(const std::vector<std::pair<std::string, Variable>>& weights,
                                  const std::vector<std::string>& file_names, const std::string& where) {
  std::vector<std::vector<std::string>> file_parts;
  for (const std::string& n : file_names) file_parts.push_back(name_parts(n));
  std::vector<size_t> out;
  std::vector<int> taken(file_names.size(), -1);
  for (size_t i = 0; i < weights.size(); ++i) {
    const std::vector<std::string> parts = name_parts(weights[i].first);
    const size_t needed = std::min(parts.size(), name_parts(weights[i].second.name()).size());
    size_t best = 0, best_index = 0, ties = 0;
    for (size_t f = 0; f < file_parts.size(); ++f) {
      size_t common = 0;
      while (common < parts.size() && common < file_parts[f].size() &&
             parts[parts.size() - 1 - common] == file_parts[f][file_parts[f].size() - 1 - common])
        ++common;
      if (common > best) {
        best = common;
        best_index = f;
        ties = 1;
      } else if (common == best && common > 0) {
        ++ties;
      }
    }
    if (best < needed)
      KILN_THROW(IOError, "[", where, "] has no weight named like '", weights[i].first, "' (",
                 weights[i].second.name(), ") among its weight_names. Hint: load into the architecture that was saved.");
    if (ties > 1)
      KILN_THROW(IOError, "[", where, "] has several weights named like '", weights[i].first,
                 "', so which one it is cannot be told. Hint: the file is damaged or was edited.");
    if (taken[best_index] >= 0)
      KILN_THROW(IOError, "[", where, "] weight '", file_names[best_index], "' would load both ",
                 weights[static_cast<size_t>(taken[best_index])].first, " and ", weights[i].first,
                 ". Hint: the file is damaged or was edited.");
    taken[best_index] = static_cast<int>(i);
    out.push_back(best_index);
  }
  return out;
}

// Keras's save_weights_to_hdf5_group.
void write_weights(Hdf5Group& g, const Model& model) {
  std::vector<std::string> layer_names;
  for (const LayerHandle& l : model.layers()) layer_names.push_back(l->name());
  g.write_keras_string_list("layer_names", layer_names);
  g.write_string_attribute("backend", kBackend, kBytesKind);
  g.write_string_attribute("keras_version", kKerasVersion, kBytesKind);
  // Groups in name order, as Keras creates them ("to avoid prefix issues").
  std::vector<const Layer*> sorted;
  for (const LayerHandle& l : model.layers()) sorted.push_back(l.get());
  std::sort(sorted.begin(), sorted.end(), [](const Layer* a, const Layer* b) { return a->name() < b->name(); });
  for (const Layer* layer : sorted) {
    Hdf5Group lg = g.create_group(layer->name());
    std::vector<Variable> weights;
    std::vector<std::string> names;
    for (const auto& [name, w] : saved_weight_names(*layer)) {
      weights.push_back(w);
      names.push_back(name + ":0");
    }
    lg.write_keras_string_list("weight_names", names);
    for (size_t i = 0; i < weights.size(); ++i) lg.write_dataset(names[i], saved_value(weights[i]));
  }
}

// conv_utils.convert_kernel: reverses every axis but the last two of (kh, kw, in, out).
HostTensor flip_spatial(const HostTensor& kernel) {
  if (kernel.dims().size() != 4) return kernel;
  const HostTensor k = kernel.astype(DType::kF32);
  HostTensor out(k.shape());
  const int64_t kh = k.dims()[0], kw = k.dims()[1], inner = k.dims()[2] * k.dims()[3];
  auto src = k.data<float>();
  auto dst = out.data<float>();
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j)
      for (int64_t c = 0; c < inner; ++c)
        dst[static_cast<size_t>((i * kw + j) * inner + c)] =
            src[static_cast<size_t>(((kh - 1 - i) * kw + (kw - 1 - j)) * inner + c)];
  return out;
}

// Keras's load_weights_from_hdf5_group: topological, weightless layers skipped on both sides.
struct FileLayer {
  std::string name;
  std::vector<std::string> weight_names;
};

// The layers of `g` that hold weights, in layer_names order.
std::vector<FileLayer> file_layers_of(const Hdf5Group& g, const std::string& path) {
  if (!g.has_keras_string_list("layer_names"))
    KILN_THROW(IOError, "[", path, "] ", g.path(), " has no layer_names attribute, so it holds no Keras weights. "
               "Hint: pass a file written by save_weights or model.save.");
  std::vector<FileLayer> file_layers;
  for (const std::string& name : g.read_keras_string_list("layer_names")) {
    if (!g.has_group(name))
      KILN_THROW(IOError, "[", path, "] layer_names lists '", name, "' but ", g.path(), " has no group '", name,
                 "'. Hint: the file is damaged or was edited.");
    std::vector<std::string> wn = g.open_group(name).read_keras_string_list("weight_names");
    if (!wn.empty()) file_layers.push_back({name, std::move(wn)});
  }
  return file_layers;
}

// Pairs file layers with model layers (by position, or by name when options.by_name), reads
// every pair's values and assigns them only once all are read and checked: a failed load
// changes nothing. With skip_mismatch a pair whose weight count or shapes differ is skipped.
void read_weights(const Hdf5Group& g, Model& model, const std::string& path, LoadWeightsOptions options) {
  const std::vector<FileLayer> file_layers = file_layers_of(g, path);
  // Keras 2's _need_convert_kernel: Theano convolves, TensorFlow (and Kiln) correlate, so a
  // kernel saved under the Theano backend is flipped in its spatial axes on load.
  const bool theano = g.has_attribute("backend") && g.read_string_attribute("backend") == "theano";
  std::vector<const Layer*> layers;
  for (const LayerHandle& l : model.layers())
    if (!internal::saved_weights(*l).empty()) layers.push_back(l.get());
  std::vector<std::pair<const FileLayer*, const Layer*>> pairs;
  if (options.by_name) {
    for (const Layer* l : layers) {
      auto f = std::find_if(file_layers.begin(), file_layers.end(), [&](const FileLayer& fl) { return fl.name == l->name(); });
      if (f != file_layers.end()) pairs.emplace_back(&*f, l);  // layers the file lacks keep their values
    }
  } else {
    if (layers.size() != file_layers.size()) {
      std::string file_names, model_names;
      for (const FileLayer& f : file_layers) file_names += (file_names.empty() ? "" : ", ") + f.name;
      for (const Layer* l : layers) model_names += (model_names.empty() ? "" : ", ") + l->name();
      KILN_THROW(IOError, "[", path, "] holds weights for ", file_layers.size(), " layers (", file_names,
                 "), but model '", model.name(), "' has ", layers.size(), " layers with weights (", model_names,
                 "). Hint: build the model (declare input_shape) and load into the architecture that was saved, "
                 "or pass by_name to load the layers whose names match.");
    }
    for (size_t k = 0; k < layers.size(); ++k) pairs.emplace_back(&file_layers[k], layers[k]);
  }
  std::vector<Variable> vars;
  std::vector<HostTensor> values;
  std::vector<std::string> where;
  for (const auto& [f, layer] : pairs) {
    std::vector<Variable> weights = internal::saved_weights(*layer);
    auto skip = [&, f = f, layer = layer](const std::string& why) {
      if (!options.skip_mismatch) return false;
      log(LogLevel::kWarning, str_cat("load_weights: skipping layer '", layer->name(), "' (file layer '", f->name,
                                      "' of ", path, "): ", why));
      return true;
    };
    if (weights.size() != f->weight_names.size()) {
      const std::string why = str_cat("the file's holds ", f->weight_names.size(), " weights, the model's ",
                                      weights.size());
      if (skip(why)) continue;
      KILN_THROW(IOError, "[", path, "] layer '", f->name, "' holds ", f->weight_names.size(),
                 " weights, but layer '", layer->name(), "' of the model has ", weights.size(),
                 ". Hint: load into the architecture that was saved.");
    }
    Hdf5Group lg = g.open_group(f->name);
    std::vector<HostTensor> layer_values;
    for (const std::string& wn : f->weight_names) {
      if (!lg.has_dataset(wn))
        KILN_THROW(IOError, "[", path, "] missing dataset ", lg.path(), "/", wn,
                   " (listed in weight_names). Hint: the file is damaged or truncated.");
      layer_values.push_back(lg.read_dataset(wn));
    }
    if (theano && layer->class_name() == "Conv2D" && !layer_values.empty())
      layer_values[0] = flip_spatial(layer_values[0]);
    std::vector<std::string> value_names = f->weight_names;
    if (const auto* nested = dynamic_cast<const ModelLayer*>(layer)) {  // by name: see match_by_name
      const std::vector<size_t> order = match_by_name(nested->weight_paths(), f->weight_names, path + ":" + lg.path());
      std::vector<HostTensor> ordered;
      value_names.clear();
      for (size_t k : order) {
        ordered.push_back(layer_values[k]);
        value_names.push_back(f->weight_names[k]);
      }
      layer_values = std::move(ordered);
      weights.clear();
      for (const auto& [name, w] : nested->weight_paths()) weights.push_back(w);
    }
    bool shapes_match = true;
    for (size_t i = 0; i < weights.size(); ++i) shapes_match &= layer_values[i].dims() == weights[i].shape().dims();
    if (!shapes_match && skip("weight shapes differ")) continue;
    for (size_t i = 0; i < weights.size(); ++i) {
      vars.push_back(weights[i]);
      values.push_back(std::move(layer_values[i]));
      where.push_back(str_cat(lg.path(), "/", value_names[i]));
    }
  }
  internal::assign_checked(vars, values, path, where);
}

void write_optimizer_weights(Hdf5Group& root, const Optimizer& optimizer) {
  std::vector<internal::NamedVariable> weights = internal::keras_optimizer_weights(optimizer);
  Hdf5Group og = root.create_group("optimizer_weights");
  std::vector<std::string> names;
  for (const internal::NamedVariable& w : weights) names.push_back(w.name + ":0");
  og.write_keras_string_list("weight_names", names);
  for (size_t i = 0; i < weights.size(); ++i) og.write_dataset(names[i], saved_value(weights[i].variable));
}

// Keras 2 creates the slots, then set_weights; a list that does not fit is a warning and a
// fresh optimizer (Keras's "Error in loading the saved optimizer state"), never a failed load.
void read_optimizer_weights(const Hdf5Group& root, Model& model, const std::string& path,
                            const std::string& keras_version) {
  Hdf5Group og = root.open_group("optimizer_weights");
  const std::vector<std::string> names =
      og.has_keras_string_list("weight_names") ? og.read_keras_string_list("weight_names") : std::vector<std::string>{};
  std::vector<HostTensor> values;
  for (const std::string& name : names) {
    if (!og.has_dataset(name))
      KILN_THROW(IOError, "[", path, "] missing dataset /optimizer_weights/", name,
                 " (listed in weight_names). Hint: the file is damaged or truncated.");
    values.push_back(og.read_dataset(name));
  }
  Optimizer& optimizer = *model.optimizer();
  optimizer.create_slots(model.trainable_weights());
  const std::string why = internal::restore_keras2_optimizer_weights(optimizer, model.trainable_weights(), names, values);
  if (!why.empty())
    log(LogLevel::kWarning,
        str_cat("[", path, "]", keras_version.empty() ? "" : " (written by Keras " + keras_version + ")",
                " skipped the saved optimizer state (", names.size(), " optimizer_weights entries): ", why,
                ". The model's ", optimizer.class_name(), " optimizer starts fresh, as Keras does."));
}

// The model config with each host layer's vocabulary (and idf weights) written into its
// config: an .h5 file has no assets, and Keras reads such a config as a given vocabulary.
std::string model_config_with_vocabularies(const Model& model) {
  std::string text = model.to_json();
  nlohmann::json j = nlohmann::json::parse(text);
  if (!j.contains("config") || !j["config"].is_object() || !j["config"].contains("layers")) return text;
  for (nlohmann::json& entry : j["config"]["layers"]) {
    nlohmann::json& config = entry["config"];
    for (const LayerHandle& layer : model.layers()) {
      const auto* host = dynamic_cast<const HostLayer*>(&*layer);
      if (host == nullptr || layer->name() != config.value("name", "")) continue;
      nlohmann::json with = nlohmann::json::parse(host->get_config_with_vocabulary());
      if (config.contains("batch_input_shape")) with["batch_input_shape"] = config["batch_input_shape"];
      config = std::move(with);
    }
  }
  return j.dump();
}

std::string keras_version_of(const Hdf5Group& root) {
  return root.has_attribute("keras_version") ? root.read_string_attribute("keras_version") : "";
}

}  // namespace

void save_model_h5(const Model& model, const std::string& path, SaveOptions options) {
  write_h5_atomically(path, [&](Hdf5Group& root) {
    root.write_string_attribute("keras_version", kKerasVersion, kStrKind);
    root.write_string_attribute("backend", kBackend, kStrKind);
    root.write_string_attribute("model_config", model_config_with_vocabularies(model), kBytesKind);
    const bool with_optimizer = options.include_optimizer && model.is_compiled();
    if (with_optimizer)
      root.write_string_attribute("training_config", training_config_json(model.compile_options()), kBytesKind);
    Hdf5Group weights = root.create_group("model_weights");
    write_weights(weights, model);
    if (with_optimizer && model.optimizer()->slots_created()) write_optimizer_weights(root, *model.optimizer());
  });
}

namespace {

[[noreturn]] void throw_no_model_config(const Hdf5Group& root, const std::string& path) {
  KILN_THROW(IOError, "[", path, "] has no model_config attribute: ",
             root.has_keras_string_list("layer_names")
                 ? "it holds weights only (save_weights). Hint: build the model (in C++, or with "
                   "keras::models::model_from_json on the model.to_json() text saved beside it) and call load_weights."
                 : "it is not a Keras model file.");
}

}  // namespace

std::unique_ptr<Model> load_model_h5(const std::string& path, const LoadOptions& options) {
  Hdf5File file = Hdf5File::open(path);
  const Hdf5Group& root = file.root();
  if (!root.has_attribute("model_config")) throw_no_model_config(root, path);
  const std::string keras_version = keras_version_of(root);
  std::string model_config = root.read_string_attribute("model_config");
  // Keras 3's legacy .h5 writer serializes the model as its .keras files do (layers as
  // {"module", "class_name", "config", "build_config"}, Functional nodes as {"args",
  // "kwargs"}, DTypePolicy objects), so its config is read by the .keras reader, which also
  // knows what Keras 3 means by a name (its hard_sigmoid is not Keras 2's).
  if (keras_version.starts_with("3."))
    model_config = internal::keras2_configs_from_keras3(model_config, path + ":model_config", keras_version,
                                                        LoadOptions{.compile = false,
                                                                    .custom_objects = options.custom_objects})
                       .model_config;
  std::unique_ptr<Model> model = internal::model_from_config(
      model_config,
      internal::ConfigSource{.path = path, .keras_version = keras_version, .custom_objects = &options.custom_objects});
  if (!root.has_group("model_weights"))
    KILN_THROW(IOError, "[", path, "] has no model_weights group. Hint: the file is damaged or truncated.");
  read_weights(root.open_group("model_weights"), *model, path, {});
  if (options.compile && root.has_attribute("training_config")) {
    internal::compile_from_training_config(*model, root.read_string_attribute("training_config"), path, keras_version);
    if (root.has_group("optimizer_weights")) read_optimizer_weights(root, *model, path, keras_version);
  }
  return model;
}

std::string read_model_config(const std::string& path) {
  Hdf5File file = Hdf5File::open(path);
  if (!file.root().has_attribute("model_config")) throw_no_model_config(file.root(), path);
  return file.root().read_string_attribute("model_config");
}

void save_weights_h5(const Model& model, const std::string& path) {
  write_h5_atomically(path, [&](Hdf5Group& root) { write_weights(root, model); });
}

void load_weights_h5(Model& model, const std::string& path, LoadWeightsOptions options) {
  Hdf5File file = Hdf5File::open(path);
  const Hdf5Group& root = file.root();
  // Keras descends into model_weights only when the root has no layer_names.
  if (!root.has_keras_string_list("layer_names") && root.has_group("model_weights"))
    read_weights(root.open_group("model_weights"), model, path, options);
  else
    read_weights(root, model, path, options);
}

}  // namespace kiln::keras
