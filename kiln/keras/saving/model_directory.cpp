// The model directory: model.json is the table of contents (format, version, configs and
// the checksums of the tensor files); the tensors are safetensors, named by variable.
#include "kiln/keras/saving/model_directory.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/core/crc32c.h"
#include "kiln/io/atomic_file.h"
#include "kiln/io/file_reader.h"
#include "kiln/io/safetensors.h"
#include "kiln/keras/saving/keras_h5.h"
#include "kiln/keras/saving/saving_impl.h"
#include "kiln/keras/saving/training_config.h"

namespace kiln::keras {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kFormat = "kiln.model_directory";
constexpr int kVersion = 1;

uint32_t file_crc(const std::string& path) {
  std::string bytes = io::read_file(path);
  return crc32c(bytes.data(), bytes.size());
}

// Writes `vars` by name and returns the file's entry for model.json.
json write_tensors(const std::string& path, const std::vector<Variable>& vars, const std::string& kind) {
  std::vector<io::NamedTensor> tensors;
  for (const Variable& v : vars) tensors.push_back({v.name(), v.storage().clone()});
  io::write_safetensors(path, tensors, {{"format", kind}});
  return {{"file", fs::path(path).filename().string()}, {"crc32c", file_crc(path)}};
}

// Reads `vars` by name from the file model.json lists under `key`, after its checksum.
void read_tensors(const std::string& dir, const json& toc, const char* key, const std::vector<Variable>& vars) {
  const std::string toc_path = (fs::path(dir) / kModelJsonFile).string();
  if (!toc.contains(key) || !toc[key].is_object() || !toc[key].contains("file") || !toc[key]["file"].is_string() ||
      !toc[key].contains("crc32c") || !toc[key]["crc32c"].is_number_unsigned())
    KILN_THROW(IOError, "[", toc_path, "] has no valid '", key, "' entry. Hint: the directory is damaged.");
  // A bare file name inside the directory: model.json must not point a load anywhere else.
  const std::string name = toc[key]["file"].get<std::string>();
  const fs::path file_name(name);
  if (name.empty() || name == "." || name == ".." || file_name.filename() != file_name || file_name.is_absolute())
    KILN_THROW(IOError, "[", toc_path, "] lists '", name, "' as its '", key, "' file, which is not a file name inside "
               "the model directory. Hint: the directory is damaged or was edited by hand.");
  const std::string path = (fs::path(dir) / file_name).string();
  if (!fs::exists(path))
    KILN_THROW(IOError, "[", path, "] is missing (listed in model.json). Hint: copy the whole model directory.");
  if (file_crc(path) != toc[key]["crc32c"].get<uint32_t>())
    KILN_THROW(IOError, "[", path, "] does not match the checksum model.json records: the file is corrupt or "
               "from another save (a save interrupted midway?). Hint: save the model again.");
  io::SafetensorsFile file = io::read_safetensors(path);
  std::vector<HostTensor> values;
  std::vector<std::string> where;
  for (const Variable& v : vars) {
    const HostTensor* t = io::find_tensor(file.tensors, v.name());
    if (t == nullptr)
      KILN_THROW(IOError, "[", path, "] has no tensor '", v.name(),
                 "'. Hint: load into the architecture (and optimizer) that was saved.");
    values.push_back(*t);
    where.push_back("tensor '" + v.name() + "'");
  }
  if (file.tensors.size() != vars.size())
    KILN_THROW(IOError, "[", path, "] holds ", file.tensors.size(), " tensors, but the model needs ", vars.size(),
               ". Hint: load into the architecture (and optimizer) that was saved.");
  internal::assign_checked(vars, values, path, where);
}

json read_toc(const std::string& dir) {
  const std::string path = (fs::path(dir) / kModelJsonFile).string();
  if (!fs::is_directory(dir))
    KILN_THROW(IOError, "[", dir, "] is not a model directory. Hint: pass the directory model.save wrote.");
  json toc;
  try {
    toc = json::parse(io::read_file(path));
  } catch (const json::exception& e) {
    KILN_THROW(IOError, "[", path, "] is not valid JSON: ", e.what(), ". Hint: the directory is damaged.");
  }
  if (!toc.is_object() || toc.value("format", "") != kFormat)
    KILN_THROW(IOError, "[", path, "] is not a Kiln model directory (expected format \"", kFormat, "\").");
  if (toc.value("version", 0) > kVersion || !toc.contains("model_config"))
    KILN_THROW(IOError, "[", path, "] has version ", toc.value("version", 0), " or lacks model_config; this Kiln "
               "reads version ", kVersion, ". Hint: load it with the Kiln that saved it.");
  return toc;
}

}  // namespace

void save_model_directory(const Model& model, const std::string& dir, SaveOptions options) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir))
    KILN_THROW(IOError, "[", dir, "] cannot create the model directory", ec ? ": " + ec.message() : "", ".");
  json toc = {{"format", kFormat}, {"version", kVersion}, {"keras_version", kKerasVersion},
              {"model_config", json::parse(model.to_json())}};
  toc["weights"] = write_tensors((fs::path(dir) / kWeightsFile).string(), model.weights(), "kiln.weights");
  const std::string optimizer_path = (fs::path(dir) / kOptimizerFile).string();
  const bool with_optimizer = options.include_optimizer && model.is_compiled();
  if (with_optimizer) {
    toc["training_config"] = json::parse(training_config_json(model.compile_options()));
    if (model.optimizer()->slots_created())
      toc["optimizer"] = write_tensors(optimizer_path, model.optimizer()->variables(), "kiln.optimizer");
  }
  if (!toc.contains("optimizer")) fs::remove(optimizer_path, ec);  // a stale one from an earlier save
  io::write_file_atomically((fs::path(dir) / kModelJsonFile).string(), toc.dump(2) + "\n");
}

std::unique_ptr<Model> load_model_directory(const std::string& dir, bool compile) {
  const json toc = read_toc(dir);
  const std::string toc_path = (fs::path(dir) / kModelJsonFile).string();
  try {
    std::unique_ptr<Model> model = internal::model_from_config(toc["model_config"].dump(), toc_path);
    read_tensors(dir, toc, "weights", model->weights());
    if (compile && toc.contains("training_config")) {
      internal::compile_from_training_config(*model, toc["training_config"].dump(), toc_path);
      if (toc.contains("optimizer")) {
        model->optimizer()->create_slots(model->trainable_weights());
        read_tensors(dir, toc, "optimizer", model->optimizer()->variables());
      }
    }
    return model;
  } catch (const json::exception& e) {
    KILN_THROW(IOError, "[", toc_path, "] is malformed: ", e.what(), ". Hint: the directory is damaged.");
  }
}

}  // namespace kiln::keras
