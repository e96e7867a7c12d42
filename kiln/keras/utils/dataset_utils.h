// Keras's dataset_utils for the *_dataset_from_directory functions: listing a folder of class
// subfolders the way Keras lists it, the shuffle before the split, and the training/validation
// split itself, so that Kiln's datasets hold the same files in the same subsets as Keras's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace kiln::keras::utils {

/// Keras's `labels` argument: "inferred" (from the subfolder names), a list of integer labels
/// (one per file, in the sorted order of the file paths), or std::nullopt (no labels).
using LabelsArg = std::optional<std::variant<std::string, std::vector<int64_t>>>;

/// What index_directory found: the files, their labels (empty without labels) and the class
/// names (the subfolders, or the distinct labels of a list as text).
struct DirectoryIndex {
  std::vector<std::string> file_paths;
  std::vector<int64_t> labels;
  std::vector<std::string> class_names;
};

/// Keras's index_directory. With labels "inferred", the classes are the sorted subfolders of
/// `directory` not starting with '.' (or `class_names`, in that order, which must name
/// subfolders), and each class folder is walked to any depth; otherwise the whole of
/// `directory` is walked. Files whose lower-cased name ends in one of `formats` are kept,
/// sorted by folder path, then by name. With `shuffle`, files and labels are permuted together
/// by the permutation numpy's RandomState(seed).shuffle makes (MT19937, the same draws), so the
/// order equals Keras's. Throws DataError for a missing or unreadable folder, ValueError for
/// arguments that do not fit (class_names not subfolders, a labels list of another length).
/// Errors name `caller` (the user's function).
DirectoryIndex index_directory(const std::string& directory, const LabelsArg& labels,
                               const std::vector<std::string>& formats,
                               const std::vector<std::string>& class_names, bool shuffle,
                               uint64_t seed, bool follow_links,
                               const std::string& caller = "index_directory");

/// The permutation numpy.random.RandomState(seed).shuffle applies to a list of n items:
/// result[i] is the index of the item that ends at position i. seed must be below 2^32, as
/// numpy's (ValueError otherwise).
std::vector<int64_t> numpy_shuffle_permutation(int64_t n, uint64_t seed);

/// Keras's check_validation_split_arg: validation_split in [0, 1) (0: none), subset "",
/// "training", "validation" or "both", both or neither given, and a seed when shuffling a split.
void check_validation_split_arg(double validation_split, const std::string& subset, bool shuffle,
                                const std::optional<uint64_t>& seed, const std::string& caller);

/// Keras's get_training_or_validation_split: the last int(validation_split * n) items are the
/// validation subset, the others the training subset (subset "training" or "validation"); all
/// items without a split. Returns the [begin, end) range of the subset. Throws ValueError when
/// the split leaves the subset empty (Keras gives the validation subset every file there).
std::pair<int64_t, int64_t> training_or_validation_range(int64_t n, double validation_split,
                                                         const std::string& subset,
                                                         const std::string& directory,
                                                         const std::string& caller);

}  // namespace kiln::keras::utils
