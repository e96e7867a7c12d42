// Normalization (keras.layers.Normalization): (x - mean) / max(sqrt(variance), 1e-7) with
// one mean and variance per index of the kept axes, given or learned by adapt() from an array
// or a Dataset. Adapted statistics are the non-trainable weights "mean", "variance" and "count"
// (an int64 scalar: how many values each statistic summarizes) that .h5 and .keras files hold,
// as Keras 2 and 3 save them.
#pragma once

#include <optional>
#include <vector>

#include "kiln/data/dataset.h"
#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

/// Normalization's keyword arguments, in Keras's order.
struct NormalizationOptions {
  /// The axes (of the input including its batch axis) with their own statistics; none
  /// (std::nullopt) takes one mean and variance for everything (Keras's axis=None).
  std::optional<std::vector<int>> axis = std::vector<int>{-1};
  /// Fixed statistics instead of adapt(): one value, or one per index of the kept axes (both
  /// or neither).
  std::optional<std::vector<double>> mean = std::nullopt;
  std::optional<std::vector<double>> variance = std::nullopt;
  /// mean + x * max(sqrt(variance), 1e-7): undoes the normalization.
  bool invert = false;
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

class Normalization : public Layer {
 public:
  explicit Normalization(NormalizationOptions options = {});
  static Normalization from_config(const std::string& config_json);
  std::string class_name() const override { return "Normalization"; }
  std::string get_config() const override;

  /// Learns mean and (population) variance from `data` (examples along axis 0), building the
  /// layer for its per-example shape, and sets count to the number of values each statistic
  /// summarizes (tf.keras 2's update_state; Keras 3 leaves count at 0 and only saves it).
  /// ValueError when mean and variance were given.
  void adapt(const HostTensor& data);
  /// The same over every element of `dataset` (each a batch of examples; its one component,
  /// or the first of (x, y)), or its first `steps` elements.
  void adapt(const data::Dataset& dataset, std::optional<int64_t> steps = std::nullopt);

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  /// Kept axes of the per-example dims (0-based, without the batch axis), sorted.
  std::vector<int64_t> kept_axes(const Dims& input_shape) const;
  /// Assigns accumulated statistics to the weights.
  void set_statistics(const std::vector<double>& mean, const std::vector<double>& variance, int64_t count);

  NormalizationOptions options_;
  Dims broadcast_;  // (1, ...) over the input with the kept dims
  Variable mean_, variance_, count_;
};

}  // namespace kiln::keras
