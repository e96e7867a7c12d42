// What image_dataset_from_directory and text_dataset_from_directory share after the folder is
// listed (dataset_utils.h): the label arguments, Keras's labels_to_dataset, the subsets and
// their pipelines of (file, label) rows, and the DirectoryDataset they return.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/data/dataset.h"
#include "kiln/keras/utils/dataset_utils.h"

namespace kiln::keras::utils {

/// What a *_dataset_from_directory function returns: a Dataset with Keras's class_names and
/// file_paths. With subset "both" it also holds the validation dataset and unpacks as Keras's
/// pair does: `auto [train_ds, val_ds] = image_dataset_from_directory(dir, {...})`.
class DirectoryDataset : public data::Dataset {
 public:
  DirectoryDataset(data::Dataset dataset, std::vector<std::string> names,
                   std::vector<std::string> paths)
      : data::Dataset(std::move(dataset)), class_names(std::move(names)), file_paths(std::move(paths)) {}

  /// The class of each label value (the subfolders, or a labels list's distinct values as text).
  std::vector<std::string> class_names;
  /// The files, in the dataset's order before the per-epoch shuffle.
  std::vector<std::string> file_paths;

  /// For subset "both": 0 is the training dataset, 1 the validation one. ValueError otherwise.
  template <size_t I>
  DirectoryDataset get() const {
    static_assert(I < 2);
    require_pair();
    if constexpr (I == 0) {
      DirectoryDataset training = *this;
      training.validation_.reset();
      return training;
    } else {
      return *validation_;
    }
  }
  /// Attaches the validation dataset (subset "both").
  void set_validation(DirectoryDataset validation) {
    validation_ = std::make_shared<DirectoryDataset>(std::move(validation));
  }

 private:
  void require_pair() const;
  std::shared_ptr<const DirectoryDataset> validation_;
};

/// The labels and label_mode a *_from_directory call uses after Keras's checks: both none
/// when either is none. ValueError for a label_mode other than int/categorical/binary, or
/// class_names given with a labels list or without labels.
struct DirectoryLabels {
  LabelsArg labels;
  std::optional<std::string> label_mode;
};
DirectoryLabels check_label_args(const LabelsArg& labels, const std::optional<std::string>& label_mode,
                                 const std::vector<std::string>& class_names, const std::string& caller);

/// Keras's labels_to_dataset as one tensor: "int" -> i32[n], "categorical" -> one-hot
/// f32[n, num_classes], "binary" -> f32[n, 1]. ValueError for a label outside the classes
/// (Keras's one_hot would give a zero row; binary would pass any value).
HostTensor labels_tensor(const std::vector<int64_t>& labels, const std::string& label_mode, int64_t num_classes,
                         const std::string& caller);

/// How directory_dataset turns a listed folder into datasets.
struct DirectoryPipeline {
  std::optional<std::string> label_mode;
  std::optional<int64_t> batch_size;
  bool shuffle = true;
  uint64_t seed = 0;
  double validation_split = 0.0;
  std::string subset = "";
  bool verbose = true;
  /// "images", "text files": what the messages call the files.
  std::string kind;
  /// The allowed formats as a message lists them (".txt").
  std::string formats;
  /// Reads one file into its element's first component; runs in a parallel, stateless map
  /// named `load_name`.
  std::function<HostTensor(const std::string& path)> load;
  std::string load_name;
};

/// The DirectoryPipeline fields a function's options share (label_mode and seed as checked
/// and drawn); the caller adds kind, formats and load.
template <typename Options>
DirectoryPipeline directory_pipeline(const Options& options, const std::optional<std::string>& label_mode,
                                     uint64_t seed) {
  DirectoryPipeline p;
  p.label_mode = label_mode;
  p.batch_size = options.batch_size;
  p.shuffle = options.shuffle;
  p.seed = seed;
  p.validation_split = options.validation_split;
  p.subset = options.subset;
  p.verbose = options.verbose;
  return p;
}

/// The rest of Keras's *_dataset_from_directory once index_directory listed the files: the
/// binary label check, "Found N files belonging to K classes.", the split into subsets (the
/// validation subset of "both" unshuffled), and per subset Keras's paths_and_labels_to_dataset:
/// rows of (file index, label), shuffled (buffer batch_size * 8, or 1024) before a parallel
/// map that loads each file, then batched and prefetched (AUTOTUNE). ValueError for an empty
/// subset or a binary label_mode without exactly 2 classes.
DirectoryDataset directory_dataset(const std::string& directory, const DirectoryIndex& index,
                                   const DirectoryPipeline& pipeline, const std::string& caller);

}  // namespace kiln::keras::utils

// Structured bindings over subset "both"'s result: auto [train, val] = ...
template <>
struct std::tuple_size<kiln::keras::utils::DirectoryDataset> : std::integral_constant<size_t, 2> {};
template <size_t I>
struct std::tuple_element<I, kiln::keras::utils::DirectoryDataset> {
  using type = kiln::keras::utils::DirectoryDataset;
};
