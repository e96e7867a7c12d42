// `kiln summary` and `kiln inspect` over keras::load_model (every format Kiln reads).
#include "tools/kiln/model_commands.h"

#include <filesystem>
#include <ostream>
#include <regex>

#include "kiln/io/hdf5_file.h"
#include "kiln/io/zip_archive.h"
#include "kiln/keras/keras.h"
#include "kiln/keras/saving/saving.h"

namespace kiln::cli {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) { return s.ends_with(suffix); }

// The format, as load_model decides it, and the Keras version its writer recorded.
std::pair<std::string, std::string> format_and_version(const std::string& path) {
  if (std::filesystem::is_directory(path)) return {"Kiln model directory (model.json + safetensors)", "-"};
  if (ends_with(path, ".keras")) {
    const std::string metadata = io::ZipReader::open(path).read("metadata.json");
    std::smatch m;
    const bool found = std::regex_search(metadata, m, std::regex(R"re("keras_version"\s*:\s*"([^"]*)")re"));
    return {"Keras 3 archive (.keras)", found ? m[1].str() : "unknown"};
  }
  io::Hdf5File file = io::Hdf5File::open(path);
  const std::string version =
      file.root().has_attribute("keras_version") ? file.root().read_string_attribute("keras_version") : "unknown";
  return {"Keras 2 HDF5 (.h5)", version};
}

}  // namespace

int summary(const std::string& path, std::ostream& out) {
  std::unique_ptr<keras::Model> model = keras::load_model(path, {.compile = false});
  model->summary(out);
  return 0;
}

int inspect(const std::string& path, std::ostream& out) {
  const auto [format, version] = format_and_version(path);
  std::unique_ptr<keras::Model> model = keras::load_model(path);
  out << "file: " << path << "\nformat: " << format << "\nkeras_version: " << version << "\nmodel: " << model->name()
      << " (" << model->layers().size() << " layers, " << model->count_params() << " parameters)\n";
  for (const keras::LayerHandle& layer : model->layers()) {
    out << "  " << layer->name() << " (" << layer->class_name() << ")\n";
    for (const Variable& w : layer->weights())
      out << "    " << w.name() << " " << w.storage().shape() << (w.trainable() ? "" : " (non-trainable)") << "\n";
  }
  if (keras::Optimizer* opt = model->optimizer()) {
    out << "optimizer: " << opt->class_name() << " " << opt->get_config() << "\n";
    for (const Variable& v : opt->variables()) out << "    " << v.name() << " " << v.storage().shape() << "\n";
  } else {
    out << "optimizer: none (the file was saved without compiling)\n";
  }
  return 0;
}

}  // namespace kiln::cli
