// keras.utils.image_dataset_from_directory: a folder of class subfolders of image files as a
// Dataset of (image batch, label batch), decoded and resized in parallel and prefetched.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/data/dataset.h"
#include "kiln/keras/utils/directory_dataset.h"

namespace kiln::keras::utils {

/// The image files image_dataset_from_directory reads (Keras's ALLOWLIST_FORMATS), matched
/// case-insensitively. Kiln decodes JPEG and PNG; a .bmp or .gif file is listed, as Keras
/// lists it, and reading it is a DataError naming the file.
inline const std::vector<std::string> kImageFormats = {".bmp", ".gif", ".jpeg", ".jpg", ".png"};

/// image_dataset_from_directory's keyword arguments, in Keras's order, with Keras's defaults.
struct ImageDatasetOptions {
  /// "inferred" (the class subfolders), a list of integer labels (one per file, in the sorted
  /// order of the file paths: `std::vector<int64_t>{...}`), or std::nullopt (no labels).
  LabelsArg labels = "inferred";
  /// "int" (i32[batch]), "categorical" (one-hot f32[batch, num_classes]), "binary" (f32[batch, 1],
  /// exactly two classes) or std::nullopt (images only).
  std::optional<std::string> label_mode = "int";
  /// With labels "inferred": the subfolders to use, in this order (empty: all, sorted).
  std::vector<std::string> class_names = {};
  /// "grayscale", "rgb" or "rgba": 1, 3 or 4 channels.
  std::string color_mode = "rgb";
  /// Elements per batch; std::nullopt yields single images.
  std::optional<int64_t> batch_size = 32;
  /// (height, width) every image is resized to.
  std::array<int64_t, 2> image_size = {256, 256};
  /// Shuffles the files (before the split) and, in the training subset, each epoch's order.
  bool shuffle = true;
  /// The shuffles' seed (below 2^32, as numpy's); std::nullopt draws one.
  std::optional<uint64_t> seed = std::nullopt;
  /// The fraction of files held out for validation; 0: no split (Keras's None).
  double validation_split = 0.0;
  /// "training", "validation" or "both" (returns both: `auto [train, val] = ...`); "" without a split.
  std::string subset = "";
  /// resize's method: "bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5",
  /// "gaussian" or "mitchellcubic". "nearest" keeps the images u8, as tf.image.resize does.
  std::string interpolation = "bilinear";
  /// Walks into subfolders that are symbolic links.
  bool follow_links = false;
  /// Crops the largest centred window of image_size's aspect ratio before resizing.
  bool crop_to_aspect_ratio = false;
  /// Pads to image_size's aspect ratio instead (resize_with_pad); not with crop_to_aspect_ratio.
  bool pad_to_aspect_ratio = false;
  /// Prints "Found N files belonging to K classes." and the subset sizes, as Keras does.
  bool verbose = true;
};

/// keras.utils.image_dataset_from_directory: the image files under `directory` (with labels
/// "inferred", one subfolder per class, walked to any depth; files of kImageFormats only),
/// shuffled with the seed and split as Keras does, then read, decoded to `color_mode`'s
/// channels and resized to image_size (f32 images, except u8 with "nearest") by a parallel
/// map (AUTOTUNE), batched and prefetched (AUTOTUNE). Elements are (images, labels), or images
/// alone without labels. Errors: DataError for a missing folder, an unreadable or damaged
/// image (when it is read, naming the file); ValueError for arguments, naming them.
DirectoryDataset image_dataset_from_directory(const std::string& directory,
                                              const ImageDatasetOptions& options = {});

}  // namespace kiln::keras::utils
