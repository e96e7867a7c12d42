// The numeric preprocessing layers that turn values into categories: CategoryEncoding
// (integer ids -> one_hot / multi_hot / count vectors) and Discretization (floats -> bucket
// ids by bin_boundaries, optionally encoded like CategoryEncoding). Both trace into the step.
#pragma once

#include <optional>
#include <vector>

#include "kiln/data/dataset.h"
#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct CategoryEncodingOptions {
  /// "multi_hot" (1 where a token occurs in the example's last axis), "one_hot" (a vector
  /// per value) or "count" (occurrences).
  std::string output_mode = "multi_hot";
  bool sparse = false;  // Kiln has no sparse tensors: false only
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: num_tokens (ids lie in [0, num_tokens)). Per-example input dims (k) or () give
/// (num_tokens); "one_hot" on (d) with d > 1 gives (d, num_tokens). An id outside the range
/// encodes as zeros (Keras raises at run time; a compiled step cannot).
class CategoryEncoding : public Layer {
 public:
  explicit CategoryEncoding(int64_t num_tokens, CategoryEncodingOptions options = {});
  static CategoryEncoding from_config(const std::string& config_json);
  std::string class_name() const override { return "CategoryEncoding"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t num_tokens_;
  CategoryEncodingOptions options_;
};

struct DiscretizationOptions {
  /// Sorted boundaries: value x goes to the number of boundaries <= x (np.digitize).
  std::optional<std::vector<double>> bin_boundaries = std::nullopt;
  /// Instead: adapt() learns num_bins - 1 approximate quantiles (Keras 3's summary algorithm).
  std::optional<int64_t> num_bins = std::nullopt;
  double epsilon = 0.01;  // adapt's quantile summary resolution
  /// "int" (i64 bucket ids), "one_hot", "multi_hot" or "count" (f32, as CategoryEncoding).
  std::string output_mode = "int";
  bool sparse = false;
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

class Discretization : public Layer {
 public:
  explicit Discretization(DiscretizationOptions options = {});
  /// Learns the boundaries from every value of `data` (one batch), or of each element of
  /// `dataset` (first component) in turn, or its first `steps`: Keras 3's summarize /
  /// merge_summaries / get_bin_boundaries, so the boundaries are Keras 3's approximate
  /// quantiles. ValueError without num_bins.
  void adapt(const HostTensor& data);
  void adapt(const data::Dataset& dataset, std::optional<int64_t> steps = std::nullopt);
  const std::optional<std::vector<double>>& bin_boundaries() const { return self_as<Discretization>().options_.bin_boundaries; }
  static Discretization from_config(const std::string& config_json);
  std::string class_name() const override { return "Discretization"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  DiscretizationOptions options_;
};

namespace internal {
/// Per-example dims after encoding (k) ids into `depth` categories with `mode`.
Dims encoded_shape(const std::string& layer, const Dims& input_shape, int64_t depth, const std::string& mode);
/// Integer ids [batch, ...] encoded as one_hot / multi_hot / count over `depth`, in `dtype`.
Tensor encode_categories(const Tensor& ids, int64_t depth, const std::string& mode, DType dtype);
/// Whether a config's "dtype" names an integer dtype ("int64", or Keras 3's DTypePolicy of
/// one): for Discretization and Hashing, their output dtype rather than a layer policy.
bool names_integer_dtype(const std::string& config_json);
}  // namespace internal

}  // namespace kiln::keras
