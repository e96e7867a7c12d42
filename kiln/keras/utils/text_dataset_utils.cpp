// text_dataset_from_directory (keras/src/utils/text_dataset_utils.py): Keras's argument checks,
// then the listing, split and pipeline image_dataset_from_directory uses, with a map that reads
// each file as a string.
#include "kiln/keras/utils/text_dataset_utils.h"

#include <algorithm>
#include <random>

#include "kiln/core/check.h"
#include "kiln/data/readers/read_file.h"

namespace kiln::keras::utils {
namespace {

constexpr const char* kWhere = "text_dataset_from_directory";

// Keras's path_to_string_content: tf.io.read_file, then tf.strings.substr(txt, 0, max_length)
// (bytes, so a multi-byte character may be cut, as in Keras).
HostTensor load_text(const std::string& path, std::optional<int64_t> max_length) {
  const HostTensor bytes = data::read_file(path);
  const auto* p = static_cast<const char*>(bytes.raw_data());
  auto n = static_cast<size_t>(bytes.num_elements());
  if (max_length) n = std::min(n, static_cast<size_t>(*max_length));
  HostTensor text(Shape(DType::kString, {}));
  text.data<std::string>()[0].assign(p, n);
  return text;
}

}  // namespace

DirectoryDataset text_dataset_from_directory(const std::string& directory, const TextDatasetOptions& options) {
  const auto [labels, label_mode] = check_label_args(options.labels, options.label_mode, options.class_names, kWhere);
  if (options.batch_size && *options.batch_size < 1)
    KILN_THROW(ValueError, "[", kWhere, "] batch_size must be positive (or none), received batch_size=",
               *options.batch_size, ".");
  if (options.max_length && *options.max_length < 0)
    KILN_THROW(ValueError, "[", kWhere, "] max_length must be non-negative (or none), received max_length=",
               *options.max_length, ".");
  check_validation_split_arg(options.validation_split, options.subset, options.shuffle, options.seed, kWhere);

  const uint64_t seed = options.seed ? *options.seed : std::random_device()();
  const DirectoryIndex index = index_directory(directory, labels, {".txt"}, options.class_names, options.shuffle, seed,
                                               options.follow_links, kWhere);
  DirectoryPipeline pipeline = directory_pipeline(options, label_mode, seed);
  pipeline.kind = "text files";
  pipeline.formats = ".txt";
  pipeline.load = [max_length = options.max_length](const std::string& path) { return load_text(path, max_length); };
  pipeline.load_name = "load_text";
  return directory_dataset(directory, index, pipeline, kWhere);
}

}  // namespace kiln::keras::utils
