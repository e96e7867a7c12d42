// keras.utils.text_dataset_from_directory: a folder of class subfolders of .txt files as a
// Dataset of (string batch, label batch), read in parallel and prefetched.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/keras/utils/directory_dataset.h"

namespace kiln::keras::utils {

/// text_dataset_from_directory's keyword arguments, in Keras's order, with Keras's defaults.
struct TextDatasetOptions {
  /// "inferred" (the class subfolders), a list of integer labels (one per file, in the sorted
  /// order of the file paths), or std::nullopt (no labels).
  LabelsArg labels = "inferred";
  /// "int" (i32[batch]), "categorical" (one-hot f32[batch, num_classes]), "binary" (f32[batch, 1],
  /// exactly two classes) or std::nullopt (texts only).
  std::optional<std::string> label_mode = "int";
  /// With labels "inferred": the subfolders to use, in this order (empty: all, sorted).
  std::vector<std::string> class_names = {};
  /// Elements per batch; std::nullopt yields single texts (string[] scalars).
  std::optional<int64_t> batch_size = 32;
  /// Keeps the first max_length bytes of each file (tf.strings.substr's byte unit); nullopt: all.
  std::optional<int64_t> max_length = std::nullopt;
  /// Shuffles the files (before the split) and, in the training subset, each epoch's order.
  bool shuffle = true;
  /// The shuffles' seed (below 2^32, as numpy's); std::nullopt draws one.
  std::optional<uint64_t> seed = std::nullopt;
  /// The fraction of files held out for validation; 0: no split (Keras's None).
  double validation_split = 0.0;
  /// "training", "validation" or "both" (returns both: `auto [train, val] = ...`); "" without a split.
  std::string subset = "";
  /// Walks into subfolders that are symbolic links.
  bool follow_links = false;
  /// Prints "Found N files belonging to K classes." and the subset sizes, as Keras does.
  bool verbose = true;
};

/// keras.utils.text_dataset_from_directory: the .txt files (any case) under `directory` (with
/// labels "inferred", one subfolder per class, walked to any depth), listed, shuffled with the
/// seed and split exactly as image_dataset_from_directory (the same index_directory), each
/// file's bytes read as one DType::kString element (cut to max_length bytes) by a parallel map,
/// batched and prefetched. Elements are (string[batch], labels), or strings alone without
/// labels. Errors: DataError for a missing folder or an unreadable file (naming it); ValueError
/// for arguments, naming them.
DirectoryDataset text_dataset_from_directory(const std::string& directory, const TextDatasetOptions& options = {});

}  // namespace kiln::keras::utils
