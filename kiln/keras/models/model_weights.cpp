// Model::save_weights / load_weights: the weights alone, as safetensors named by variable
// (S13). Whole-model saving (architecture + optimizer state) is keras/saving (issue 7).
#include "kiln/core/check.h"
#include "kiln/io/safetensors.h"
#include "kiln/keras/models/model.h"

namespace kiln::keras {

void Model::save_weights(const std::string& path) const {
  std::vector<io::NamedTensor> tensors;
  for (const Variable& v : weights()) tensors.push_back({v.name(), v.storage().clone()});
  io::write_safetensors(path, tensors, {{"format", "kiln.weights"}, {"model", name_}});
}

void Model::load_weights(const std::string& path) {
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
