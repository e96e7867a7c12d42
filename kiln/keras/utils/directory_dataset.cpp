// The shared back half of image_dataset_from_directory and text_dataset_from_directory
// (keras/src/utils/dataset_utils.py's labels_to_dataset and the functions' split, shuffle,
// map, batch and prefetch).
#include "kiln/keras/utils/directory_dataset.h"

#include <iostream>
#include <utility>

#include "kiln/core/check.h"

namespace kiln::keras::utils {
namespace {

// Keras's paths_and_labels_to_dataset plus its batch and prefetch: the rows are file indices
// (8 bytes, so shuffle buffers them cheaply) and labels; a stateless parallel map turns each
// index into its file's element, fused with the batch (map_and_batch).
data::Dataset subset_dataset(std::shared_ptr<const std::vector<std::string>> paths, const std::vector<int64_t>& labels,
                             int64_t num_classes, bool shuffle, const DirectoryPipeline& p, const std::string& caller) {
  const auto n = static_cast<int64_t>(paths->size());
  std::vector<int64_t> index(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) index[static_cast<size_t>(i)] = i;
  std::vector<HostTensor> components = {HostTensor::from_vector<int64_t>({n}, index)};
  if (p.label_mode) components.push_back(labels_tensor(labels, *p.label_mode, num_classes, caller));
  data::Dataset ds = data::Dataset::from_tensor_slices(std::move(components));
  if (shuffle) ds = ds.shuffle(p.batch_size ? *p.batch_size * 8 : 1024, p.seed);
  data::MapFn load = [paths, fn = p.load](data::Element element) {
    const int64_t i = element[0].data<int64_t>()[0];
    element[0] = fn((*paths)[static_cast<size_t>(i)]);
    return element;
  };
  ds = ds.map(std::move(load), {.num_parallel_calls = data::kAutotune, .stateless = true, .name = p.load_name});
  if (p.batch_size) ds = ds.batch(*p.batch_size);
  return ds.prefetch(data::kAutotune);
}

}  // namespace

void DirectoryDataset::require_pair() const {
  if (!validation_)
    KILN_THROW(ValueError, "[*_dataset_from_directory] only subset=\"both\" returns a (training, validation) pair. "
               "Hint: pass .subset = \"both\", or use the dataset as it is.");
}

DirectoryLabels check_label_args(const LabelsArg& labels, const std::optional<std::string>& label_mode,
                                 const std::vector<std::string>& class_names, const std::string& caller) {
  DirectoryLabels out{labels, label_mode};
  if (labels && std::holds_alternative<std::vector<int64_t>>(*labels) && !class_names.empty())
    KILN_THROW(ValueError, "[", caller, "] class_names can only be given with labels=\"inferred\" (a labels list "
               "names its own classes).");
  if (label_mode && *label_mode != "int" && *label_mode != "categorical" && *label_mode != "binary")
    KILN_THROW(ValueError, "[", caller, "] label_mode must be \"int\", \"categorical\", \"binary\" or none, received "
               "label_mode=\"", *label_mode, "\".");
  if (!labels || !label_mode) {
    if (!labels && !class_names.empty())
      KILN_THROW(ValueError, "[", caller, "] class_names cannot be given without labels (labels=none).");
    out.labels.reset();
    out.label_mode.reset();
  }
  return out;
}

HostTensor labels_tensor(const std::vector<int64_t>& labels, const std::string& label_mode, int64_t num_classes,
                         const std::string& caller) {
  const auto n = static_cast<int64_t>(labels.size());
  if (label_mode == "int") {
    std::vector<int32_t> v(labels.begin(), labels.end());
    return HostTensor::from_vector<int32_t>({n}, v);
  }
  const int64_t width = label_mode == "binary" ? 2 : num_classes;
  for (int64_t l : labels)
    if (l < 0 || l >= width)
      KILN_THROW(ValueError, "[", caller, "] label_mode=\"", label_mode, "\" needs labels in [0, ", width,
                 "), received the label ", l, ".");
  if (label_mode == "binary") {
    std::vector<float> v(labels.begin(), labels.end());
    return HostTensor::from_vector<float>({n, 1}, v);
  }
  std::vector<float> v(static_cast<size_t>(n * num_classes), 0.0f);
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i * num_classes + labels[static_cast<size_t>(i)])] = 1.0f;
  return HostTensor::from_vector<float>({n, num_classes}, v);
}

DirectoryDataset directory_dataset(const std::string& directory, const DirectoryIndex& index,
                                   const DirectoryPipeline& p, const std::string& caller) {
  if (p.label_mode == "binary" && index.class_names.size() != 2)
    KILN_THROW(ValueError, "[", caller, "] label_mode=\"binary\" needs exactly 2 classes, received ",
               index.class_names.size(), " (", directory, "). Hint: label_mode=\"categorical\" or \"int\".");
  const auto n = static_cast<int64_t>(index.file_paths.size());
  if (p.verbose) {
    if (p.label_mode) std::cout << "Found " << n << " files belonging to " << index.class_names.size() << " classes.\n";
    else std::cout << "Found " << n << " files.\n";
  }
  const auto num_classes = static_cast<int64_t>(index.class_names.size());
  auto make = [&](const std::string& subset, bool shuffle) {
    const auto [begin, end] = training_or_validation_range(n, p.validation_split, subset, directory, caller);
    if (begin == end)
      KILN_THROW(ValueError, "[", caller, "] no ", subset.empty() ? "" : subset + " ", p.kind, " found in ", directory,
                 ". Allowed formats: ", p.formats, ".");
    if (p.verbose && !subset.empty()) std::cout << "Using " << end - begin << " files for " << subset << ".\n";
    auto paths = std::make_shared<const std::vector<std::string>>(index.file_paths.begin() + begin,
                                                                  index.file_paths.begin() + end);
    const std::vector<int64_t> labels = index.labels.empty()
                                            ? std::vector<int64_t>{}
                                            : std::vector<int64_t>(index.labels.begin() + begin,
                                                                   index.labels.begin() + end);
    return DirectoryDataset(subset_dataset(paths, labels, num_classes, shuffle, p, caller), index.class_names, *paths);
  };
  if (p.subset == "both") {
    DirectoryDataset training = make("training", p.shuffle);
    training.set_validation(make("validation", /*shuffle=*/false));
    return training;
  }
  return make(p.subset, p.shuffle);
}

}  // namespace kiln::keras::utils
