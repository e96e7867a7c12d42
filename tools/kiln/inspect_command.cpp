// `kiln inspect`: what a saved model file holds. The layer tree and the weights come from the
// file itself (config and weight groups), so a file Kiln cannot build is still shown, with
// the reason it cannot be built; a file Kiln loads also shows its optimizer state.
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/io/hdf5_file.h"
#include "kiln/io/scratch_file.h"
#include "kiln/io/zip_archive.h"
#include "kiln/keras/keras.h"
#include "kiln/keras/models/model_layer.h"
#include "kiln/keras/saving/saving.h"
#include "tools/kiln/model_commands.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool is_model_class(const std::string& cls) { return cls == "Sequential" || cls == "Functional" || cls == "Model"; }

// A serialized model's layer entries (Keras <= 2.2.2's Sequential config is the list itself).
json layers_of(const json& entry) {
  const json config = entry.value("config", json());
  if (config.is_array()) return config;
  return config.is_object() ? config.value("layers", json::array()) : json::array();
}

std::string layer_name(const json& entry) {
  const json config = entry.value("config", json());
  if (config.is_object() && config.contains("name") && config["name"].is_string()) return config["name"];
  return entry.value("name", std::string("?"));
}

std::string indent(int depth) { return std::string(static_cast<size_t>(2 + 2 * depth), ' '); }

std::string shape_text(const Shape& shape) {
  std::ostringstream s;
  s << shape;
  return s.str();
}

// keras/src/utils/naming.py to_snake_case, which names Keras 3's weight-store groups.
std::string snake_case(const std::string& cls) {
  std::string s = std::regex_replace(cls, std::regex("(.)([A-Z][a-z]+)"), "$1_$2");
  s = std::regex_replace(s, std::regex("([a-z])([A-Z])"), "$1_$2");
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// ---- Keras 2 HDF5: model_config, and each top-level layer's weight_names ------------------

void print_h5_tree(const json& layers, int depth, std::ostream& out) {
  for (const json& e : layers) {
    const std::string cls = e.value("class_name", std::string("?"));
    out << indent(depth) << layer_name(e) << " (" << cls << ")\n";
    if (is_model_class(cls)) print_h5_tree(layers_of(e), depth + 1, out);
  }
}

void print_h5_weights(const io::Hdf5Group& weights, std::ostream& out) {
  if (!weights.has_keras_string_list("layer_names")) return;
  out << "weights (by top-level layer, as stored):\n";
  for (const std::string& layer : weights.read_keras_string_list("layer_names")) {
    if (!weights.has_group(layer)) continue;
    const io::Hdf5Group g = weights.open_group(layer);
    const std::vector<std::string> names =
        g.has_keras_string_list("weight_names") ? g.read_keras_string_list("weight_names") : std::vector<std::string>{};
    out << "  " << layer << " (" << names.size() << " weights)\n";
    for (const std::string& n : names)
      out << "    " << n << " " << (g.has_dataset(n) ? shape_text(g.dataset_shape(n)) : std::string("(missing)")) << "\n";
  }
}

// ---- Keras 3 .keras: config.json, and model.weights.h5's layers/<snake class>/vars --------

void print_vars(const io::Hdf5Group& root, const std::string& path, const std::string& label, int depth,
                std::ostream& out) {
  if (!root.has_group(path)) return;
  const io::Hdf5Group g = root.open_group(path);
  for (const std::string& child : g.children()) {
    if (child == "layers") continue;  // a nested model's layers: printed with their own entries
    if (g.has_dataset(child)) {
      out << indent(depth) << label << child << " " << shape_text(g.dataset_shape(child)) << "\n";
    } else {
      print_vars(root, path + "/" + child, label + child + "/", depth, out);
    }
  }
}

void print_keras3_tree(const json& layers, const io::Hdf5Group* weights, const std::string& prefix, bool sequential,
                       int depth, std::ostream& out) {
  std::map<std::string, int> used;  // saving_lib's _save_container_state numbering
  for (const json& e : layers) {
    const std::string cls = e.value("class_name", std::string("?"));
    out << indent(depth) << layer_name(e) << " (" << cls << ")\n";
    if (sequential && cls == "InputLayer") continue;  // Sequential.layers leaves it out
    const std::string base = snake_case(cls);
    const int n = used.count(base) ? ++used[base] : (used[base] = 0);
    const std::string path = prefix + "/" + (n == 0 ? base : base + "_" + std::to_string(n));
    if (weights != nullptr) print_vars(*weights, path, "", depth + 1, out);
    if (is_model_class(cls)) print_keras3_tree(layers_of(e), weights, path + "/layers", cls == "Sequential", depth + 1, out);
  }
}

// The file's own structure: its layer tree and the weights it stores, with their shapes.
void print_file_structure(const std::string& path, std::ostream& out) {
  if (path.ends_with(".keras") && !keras::has_hdf5_signature(path)) {
    const io::ZipReader zip = io::ZipReader::open(path);
    const json top = json::parse(zip.read("config.json"), nullptr, /*allow_exceptions=*/false);
    if (!top.is_object()) {
      out << "layers: (config.json is not valid JSON)\n";
      return;
    }
    std::optional<io::ScratchFile> unpacked;
    std::optional<io::Hdf5File> file;
    if (zip.contains("model.weights.h5")) {
      unpacked.emplace(zip.read("model.weights.h5"), "kiln-inspect-", ".h5");
      file.emplace(io::Hdf5File::open(unpacked->path()));
    }
    out << "layers (config.json; weights from model.weights.h5):\n";
    print_keras3_tree(layers_of(top), file ? &file->root() : nullptr, "layers",
                      top.value("class_name", "") == "Sequential", 0, out);
    return;
  }
  const io::Hdf5File file = io::Hdf5File::open(path);
  const io::Hdf5Group& root = file.root();
  if (root.has_attribute("model_config")) {
    const json top = json::parse(root.read_string_attribute("model_config"), nullptr, /*allow_exceptions=*/false);
    out << "layers (model_config):\n";
    if (top.is_object()) print_h5_tree(layers_of(top), 0, out);
    else out << "  (model_config is not valid JSON)\n";
  }
  if (root.has_group("model_weights")) print_h5_weights(root.open_group("model_weights"), out);
  else print_h5_weights(root, out);  // a weights-only file (save_weights)
}

// A built model's layers, nested models' layers indented under them, each with its weights.
void print_built_tree(const std::vector<keras::LayerHandle>& layers, int depth, std::ostream& out) {
  for (const keras::LayerHandle& layer : layers) {
    out << indent(depth) << layer->name() << " (" << layer->class_name() << ")\n";
    if (const auto* nested = dynamic_cast<const keras::ModelLayer*>(layer.get())) {
      print_built_tree(nested->model().layers(), depth + 1, out);
      continue;
    }
    for (const Variable& w : layer->weights())
      out << indent(depth + 1) << w.name() << " " << w.storage().shape() << (w.trainable() ? "" : " (non-trainable)")
          << "\n";
  }
}

}  // namespace

int inspect(const std::string& path, std::ostream& out) {
  const auto [format, version] = format_and_version(path);
  out << "file: " << path << "\nformat: " << format << "\nkeras_version: " << version << "\n";
  std::unique_ptr<keras::Model> model;
  try {
    model = keras::load_model(path);
  } catch (const Error& e) {
    // Inspecting needs no model: show what the file holds, and why Kiln cannot build it.
    if (fs::is_directory(path)) throw;
    out << "model: Kiln cannot load it: " << e.what() << "\n";
    print_file_structure(path, out);
    return 0;  // what the file holds is shown; `kiln summary` fails on such a file
  }
  out << "model: " << model->name() << " (" << model->layers().size() << " layers, " << model->count_params()
      << " parameters)\n";
  print_built_tree(model->layers(), 0, out);
  if (keras::Optimizer* opt = model->optimizer()) {
    out << "optimizer: " << opt->class_name() << " " << opt->get_config() << "\n";
    for (const Variable& v : opt->variables()) out << "    " << v.name() << " " << v.storage().shape() << "\n";
  } else {
    out << "optimizer: none (the file was saved without compiling)\n";
  }
  return 0;
}

}  // namespace kiln::cli
