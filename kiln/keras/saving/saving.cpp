// load_model and the Model members that save (save, save_weights, load_weights): each picks
// the format from the path and hands over to keras_h5, model_directory or safetensors.
#include "kiln/keras/saving/saving.h"

#include <filesystem>

#include "kiln/core/check.h"
#include "kiln/io/safetensors.h"
#include "kiln/keras/saving/keras_h5.h"
#include "kiln/keras/saving/model_directory.h"
#include "kiln/keras/saving/saving_impl.h"

namespace kiln::keras {

std::unique_ptr<Model> load_model(const std::string& path, LoadOptions options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return load_model_directory(path, options.compile);
  if (!std::filesystem::exists(path, ec))
    KILN_THROW(IOError, "[", path, "] does not exist. Hint: pass the path model.save wrote (a .h5 file or a "
               "model directory).");
  return load_model_h5(path, options.compile);
}

void Model::save(const std::string& path, SaveOptions options) const {
  if (internal::is_h5_path(path)) save_model_h5(*this, path, options);
  else save_model_directory(*this, path, options);
}

void Model::save_weights(const std::string& path) const {
  if (internal::is_h5_path(path)) return save_weights_h5(*this, path);
  std::vector<io::NamedTensor> tensors;
  for (const Variable& v : weights()) tensors.push_back({v.name(), v.storage().clone()});
  io::write_safetensors(path, tensors, {{"format", "kiln.weights"}, {"model", name_}});
}

void Model::load_weights(const std::string& path) {
  if (internal::is_h5_path(path)) return load_weights_h5(*this, path);
  io::SafetensorsFile file = io::read_safetensors(path);
  std::vector<HostTensor> values;
  for (const Variable& v : weights()) {
    const HostTensor* t = io::find_tensor(file.tensors, v.name());
    if (t == nullptr)
      KILN_THROW(IOError, "[", path, "] has no weight named ", v.name(),
                 ". Hint: load weights saved from the same architecture (and build the model first).");
    values.push_back(*t);
  }
  set_weights(values);
}

}  // namespace kiln::keras
