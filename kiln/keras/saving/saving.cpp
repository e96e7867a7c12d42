// load_model and the Model members that save (save, save_weights, load_weights): each picks
// the format from the path and hands over to keras_h5, model_directory or safetensors.
#include "kiln/keras/saving/saving.h"

#include <filesystem>
#include <fstream>

#include "kiln/core/check.h"
#include "kiln/core/logging.h"
#include "kiln/io/safetensors.h"
#include "kiln/keras/saving/keras_archive.h"
#include "kiln/keras/saving/keras_h5.h"
#include "kiln/keras/saving/model_directory.h"
#include "kiln/keras/saving/saving_impl.h"

namespace kiln::keras {

bool has_hdf5_signature(const std::string& path) {
  char head[8] = {};
  std::ifstream(path, std::ios::binary).read(head, sizeof head);
  return std::string(head, sizeof head) == std::string("\x89HDF\r\n\x1a\n", 8);
}

std::unique_ptr<Model> load_model(const std::string& path, LoadOptions options) {
  std::error_code ec;
  // A .keras path is Keras 3's zip archive; a directory of that name is an earlier Kiln's save,
  // unless it holds the archive's members (Keras 3.6+'s zipped=False).
  if (is_keras_directory(path)) return load_model_keras(path, options);
  if (std::filesystem::is_directory(path, ec)) return load_model_directory(path, options.compile);
  if (!std::filesystem::exists(path, ec))
    KILN_THROW(IOError, "[", path, "] does not exist. Hint: pass the path model.save wrote (a .keras or .h5 file, "
               "or a model directory).");
  if (is_keras_archive_path(path) && !has_hdf5_signature(path)) return load_model_keras(path, options);
  return load_model_h5(path, options);
}

void Model::save(const std::string& path, SaveOptions options) const {
  if (is_keras_archive_path(path)) save_model_keras(*this, path, options);
  else if (internal::is_h5_path(path)) save_model_h5(*this, path, options);
  else save_model_directory(*this, path, options);
}

void Model::save_weights(const std::string& path) const {
  if (is_keras3_weights_path(path)) return save_weights_keras3(*this, path);
  if (internal::is_h5_path(path)) return save_weights_h5(*this, path);
  std::vector<io::NamedTensor> tensors;
  for (const Variable& v : weights()) tensors.push_back({v.name(), v.host_value().clone()});
  io::write_safetensors(path, tensors, {{"format", "kiln.weights"}, {"model", name_}});
}

void Model::load_weights(const std::string& path, LoadWeightsOptions options) {
  if (options.skip_mismatch && !options.by_name)
    KILN_THROW(ValueError, "[load_weights] skip_mismatch can only be set when by_name is set (", path, ").");
  if (is_keras_archive_path(path) || is_keras_directory(path) ||
      (is_keras3_weights_path(path) && is_keras3_weights_file(path)))
    return load_weights_keras3(*this, path, options);
  if (internal::is_h5_path(path)) return load_weights_h5(*this, path, options);
  io::SafetensorsFile file = io::read_safetensors(path);
  std::vector<Variable> vars;
  std::vector<HostTensor> values;
  std::vector<std::string> where;
  for (const Variable& v : weights()) {
    const HostTensor* t = io::find_tensor(file.tensors, v.name());
    if (t == nullptr) {
      if (options.by_name) continue;  // keeps its value
      KILN_THROW(IOError, "[", path, "] has no weight named ", v.name(),
                 ". Hint: load weights saved from the same architecture (and build the model first), or pass "
                 "by_name to load the weights the file has.");
    }
    if (options.skip_mismatch && t->dims() != v.shape().dims()) {
      log(LogLevel::kWarning, str_cat("load_weights: skipping ", v.name(), " of ", path, ": the file's is ",
                                      internal::shape_text(t->shape()), ", the model's ",
                                      internal::shape_text(v.shape())));
      continue;
    }
    vars.push_back(v);
    values.push_back(*t);
    where.push_back(v.name());
  }
  internal::assign_checked(vars, values, path, where);
}

}  // namespace kiln::keras
