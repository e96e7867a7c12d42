// image_dataset_from_directory (keras/src/utils/image_dataset_utils.py): Keras's argument
// checks, listing and split (dataset_utils.h), then a pipeline of file indices and labels whose
// parallel map reads, decodes and resizes each image.
#include "kiln/keras/utils/image_dataset_utils.h"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <random>
#include <utility>

#include "kiln/core/check.h"
#include "kiln/data/image/decode_image.h"
#include "kiln/data/image/image_geometry.h"
#include "kiln/data/image/resize.h"
#include "kiln/data/readers/read_file.h"

namespace kiln::keras::utils {
namespace {

constexpr const char* kWhere = "image_dataset_from_directory";

struct LoadSpec {
  int channels;
  int64_t height, width;
  std::string interpolation;
  bool crop_to_aspect_ratio, pad_to_aspect_ratio;
};

// Keras's _load_image_tf: read, decode to `channels`, then resize (smart_resize's centred crop
// first with crop_to_aspect_ratio, resize_with_pad with pad_to_aspect_ratio).
HostTensor load_image(const std::string& path, const LoadSpec& spec) {
  const HostTensor image = data::decode_image(data::read_file(path), {.channels = spec.channels});
  const data::ResizeOptions resize{.method = spec.interpolation};
  if (spec.pad_to_aspect_ratio) return data::resize_with_pad(image, spec.height, spec.width, resize);
  if (spec.crop_to_aspect_ratio) {
    const data::CropWindow c = data::aspect_ratio_crop_window(image.dims()[0], image.dims()[1], spec.height, spec.width);
    return data::resize(data::crop_to_bounding_box(image, c.top, c.left, c.height, c.width), spec.height, spec.width,
                        resize);
  }
  return data::resize(image, spec.height, spec.width, resize);
}

// Keras's labels_to_dataset: int -> i32[n], categorical -> one-hot f32[n, num_classes],
// binary -> f32[n, 1]. Keras's one_hot silently gives a zero row for a label outside
// [0, num_classes), and binary passes any value as a float; Kiln refuses both.
HostTensor labels_tensor(const std::vector<int64_t>& labels, const std::string& label_mode, int64_t num_classes) {
  const auto n = static_cast<int64_t>(labels.size());
  if (label_mode == "int") {
    std::vector<int32_t> v(labels.begin(), labels.end());
    return HostTensor::from_vector<int32_t>({n}, v);
  }
  const int64_t width = label_mode == "binary" ? 2 : num_classes;
  for (int64_t l : labels)
    if (l < 0 || l >= width)
      KILN_THROW(ValueError, "[", kWhere, "] label_mode=\"", label_mode, "\" needs labels in [0, ", width,
                 "), received the label ", l, ".");
  if (label_mode == "binary") {
    std::vector<float> v(labels.begin(), labels.end());
    return HostTensor::from_vector<float>({n, 1}, v);
  }
  std::vector<float> v(static_cast<size_t>(n * num_classes), 0.0f);
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i * num_classes + labels[static_cast<size_t>(i)])] = 1.0f;
  return HostTensor::from_vector<float>({n, num_classes}, v);
}

std::string formats_text() {
  std::string s;
  for (const std::string& f : kImageFormats) s += (s.empty() ? "" : " ") + f;
  return s;
}

// Keras's paths_and_labels_to_dataset plus its batch and prefetch: the rows are file indices
// (8 bytes, so shuffle buffers them cheaply) and labels; a stateless parallel map turns each
// index into its image, fused with the batch (map_and_batch).
data::Dataset subset_dataset(std::shared_ptr<const std::vector<std::string>> paths, const std::vector<int64_t>& labels,
                             const std::optional<std::string>& label_mode, int64_t num_classes, bool shuffle,
                             uint64_t seed, const ImageDatasetOptions& options, const LoadSpec& spec) {
  const auto n = static_cast<int64_t>(paths->size());
  std::vector<int64_t> index(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) index[static_cast<size_t>(i)] = i;
  std::vector<HostTensor> components = {HostTensor::from_vector<int64_t>({n}, index)};
  if (label_mode) components.push_back(labels_tensor(labels, *label_mode, num_classes));
  data::Dataset ds = data::Dataset::from_tensor_slices(std::move(components));
  if (shuffle) ds = ds.shuffle(options.batch_size ? *options.batch_size * 8 : 1024, seed);
  data::MapFn load = [paths, spec](data::Element element) {
    const int64_t i = element[0].data<int64_t>()[0];
    element[0] = load_image((*paths)[static_cast<size_t>(i)], spec);
    return element;
  };
  ds = ds.map(std::move(load), {.num_parallel_calls = data::kAutotune, .stateless = true, .name = "load_image"});
  if (options.batch_size) ds = ds.batch(*options.batch_size);
  return ds.prefetch(data::kAutotune);
}

}  // namespace

void DirectoryDataset::require_pair() const {
  if (!validation_)
    KILN_THROW(ValueError, "[", kWhere, "] only subset=\"both\" returns a (training, validation) pair. Hint: pass "
               ".subset = \"both\", or use the dataset as it is.");
}

DirectoryDataset image_dataset_from_directory(const std::string& directory, const ImageDatasetOptions& options) {
  LabelsArg labels = options.labels;
  std::optional<std::string> label_mode = options.label_mode;
  if (labels && std::holds_alternative<std::vector<int64_t>>(*labels) && !options.class_names.empty())
    KILN_THROW(ValueError, "[", kWhere, "] class_names can only be given with labels=\"inferred\" (a labels list "
               "names its own classes).");
  if (label_mode && *label_mode != "int" && *label_mode != "categorical" && *label_mode != "binary")
    KILN_THROW(ValueError, "[", kWhere, "] label_mode must be \"int\", \"categorical\", \"binary\" or none, received "
               "label_mode=\"", *label_mode, "\".");
  if (!labels || !label_mode) {
    if (!labels && !options.class_names.empty())
      KILN_THROW(ValueError, "[", kWhere, "] class_names cannot be given without labels (labels=none).");
    labels.reset();
    label_mode.reset();
  }
  int channels = 0;
  if (options.color_mode == "rgb") channels = 3;
  else if (options.color_mode == "rgba") channels = 4;
  else if (options.color_mode == "grayscale") channels = 1;
  else
    KILN_THROW(ValueError, "[", kWhere, "] color_mode must be \"grayscale\", \"rgb\" or \"rgba\", received color_mode=\"",
               options.color_mode, "\".");
  if (options.image_size[0] < 1 || options.image_size[1] < 1)
    KILN_THROW(ValueError, "[", kWhere, "] image_size must be two positive sizes (height, width), received image_size=(",
               options.image_size[0], ", ", options.image_size[1], ").");
  if (options.batch_size && *options.batch_size < 1)
    KILN_THROW(ValueError, "[", kWhere, "] batch_size must be positive (or none), received batch_size=",
               *options.batch_size, ".");
  std::string interpolation = options.interpolation;
  std::transform(interpolation.begin(), interpolation.end(), interpolation.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  static constexpr const char* kMethods[] = {"bilinear", "nearest", "bicubic", "area",
                                             "lanczos3", "lanczos5", "gaussian", "mitchellcubic"};
  if (std::find(std::begin(kMethods), std::end(kMethods), interpolation) == std::end(kMethods))
    KILN_THROW(ValueError, "[", kWhere, "] interpolation must be bilinear, nearest, bicubic, area, lanczos3, "
               "lanczos5, gaussian or mitchellcubic, received interpolation=\"", options.interpolation, "\".");
  if (options.crop_to_aspect_ratio && options.pad_to_aspect_ratio)
    KILN_THROW(ValueError, "[", kWhere, "] only one of crop_to_aspect_ratio and pad_to_aspect_ratio can be true.");
  check_validation_split_arg(options.validation_split, options.subset, options.shuffle, options.seed, kWhere);

  const uint64_t seed = options.seed ? *options.seed : std::random_device()();
  DirectoryIndex index = index_directory(directory, labels, kImageFormats, options.class_names, options.shuffle, seed,
                                         options.follow_links, kWhere);
  if (label_mode == "binary" && index.class_names.size() != 2)
    KILN_THROW(ValueError, "[", kWhere, "] label_mode=\"binary\" needs exactly 2 classes, received ",
               index.class_names.size(), " (", directory, "). Hint: label_mode=\"categorical\" or \"int\".");
  const auto n = static_cast<int64_t>(index.file_paths.size());
  if (options.verbose) {
    if (labels) std::cout << "Found " << n << " files belonging to " << index.class_names.size() << " classes.\n";
    else std::cout << "Found " << n << " files.\n";
  }
  const auto num_classes = static_cast<int64_t>(index.class_names.size());
  const LoadSpec spec{channels, options.image_size[0], options.image_size[1], interpolation,
                      options.crop_to_aspect_ratio, options.pad_to_aspect_ratio};

  // One subset: its files, labels and pipeline. The validation subset of "both" is not
  // shuffled per epoch (Keras's shuffle=False there).
  auto make = [&](const std::string& subset, bool shuffle) {
    const auto [begin, end] = training_or_validation_range(n, options.validation_split, subset, directory, kWhere);
    if (begin == end)
      KILN_THROW(ValueError, "[", kWhere, "] no ", subset.empty() ? "" : subset + " ", "images found in ", directory,
                 ". Allowed formats: ", formats_text(), ".");
    if (options.verbose && !subset.empty())
      std::cout << "Using " << end - begin << " files for " << subset << ".\n";
    auto paths = std::make_shared<const std::vector<std::string>>(index.file_paths.begin() + begin,
                                                                  index.file_paths.begin() + end);
    const std::vector<int64_t> subset_labels = index.labels.empty()
                                                   ? std::vector<int64_t>{}
                                                   : std::vector<int64_t>(index.labels.begin() + begin,
                                                                          index.labels.begin() + end);
    return DirectoryDataset(subset_dataset(paths, subset_labels, label_mode, num_classes, shuffle, seed, options, spec),
                            index.class_names, *paths);
  };
  if (options.subset == "both") {
    DirectoryDataset training = make("training", options.shuffle);
    training.set_validation(make("validation", /*shuffle=*/false));
    return training;
  }
  return make(options.subset, options.shuffle);
}

}  // namespace kiln::keras::utils
