// Dropout: inverted dropout in training, identity in inference. Its randomness comes from
// a key = f(seed, step counter Variable), so runs are reproducible and each step differs.
#pragma once

#include <optional>

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct DropoutOptions {
  /// The mask's shape, batch axis included (Keras's noise_shape): none draws one mask value per
  /// element; a kNoneDim entry takes the input's size there, a 1 shares the value along that
  /// axis (EfficientNet's drop-connect drops whole examples with {kNoneDim, 1, 1, 1}).
  std::optional<Dims> noise_shape = std::nullopt;
  std::optional<uint64_t> seed = std::nullopt;  // unseeded: derived from the layer name
  Dims input_shape = {};
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: rate in [0, 1), the fraction of inputs zeroed.
class Dropout : public Layer {
 public:
  explicit Dropout(double rate, DropoutOptions options = {});
  static Dropout from_config(const std::string& config_json);
  std::string class_name() const override { return "Dropout"; }
  bool supports_masking() const override { return true; }  // per-step, as in Keras
  std::string get_config() const override;
  /// The step counter (i64 scalar) mixed into the key; advanced by each training call.
  const Variable& seed_state() const { return self_as<Dropout>().counter_; }
  std::vector<Variable> random_state() const override {
    const Variable& counter = seed_state();
    return counter.defined() ? std::vector<Variable>{counter} : std::vector<Variable>{};
  }

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  Dims mask_dims(const Dims& dims) const;

  double rate_;
  DropoutOptions options_;
  Variable counter_;  // not a weight: summary() and saving leave it out
};

}  // namespace kiln::keras
