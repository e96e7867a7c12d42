// image_dataset_from_directory (keras/src/utils/image_dataset_utils.py): Keras's argument
// checks, listing and split (dataset_utils.h), then a pipeline of file indices and labels whose
// parallel map reads, decodes and resizes each image.
#include "kiln/keras/utils/image_dataset_utils.h"

#include <algorithm>
#include <cctype>
#include <random>

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

std::string formats_text() {
  std::string s;
  for (const std::string& f : kImageFormats) s += (s.empty() ? "" : " ") + f;
  return s;
}

}  // namespace

DirectoryDataset image_dataset_from_directory(const std::string& directory, const ImageDatasetOptions& options) {
  const auto [labels, label_mode] = check_label_args(options.labels, options.label_mode, options.class_names, kWhere);
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
  const LoadSpec spec{channels, options.image_size[0], options.image_size[1], interpolation,
                      options.crop_to_aspect_ratio, options.pad_to_aspect_ratio};
  DirectoryPipeline pipeline = directory_pipeline(options, label_mode, seed);
  pipeline.kind = "images";
  pipeline.formats = formats_text();
  pipeline.load = [spec](const std::string& path) { return load_image(path, spec); };
  pipeline.load_name = "load_image";
  return directory_dataset(directory, index, pipeline, kWhere);
}

}  // namespace kiln::keras::utils
