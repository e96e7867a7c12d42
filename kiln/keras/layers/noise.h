// The regularization layers that draw random numbers in training and are the identity in
// inference: SpatialDropout2D (drops whole channels) and GaussianNoise (adds N(0, stddev)).
#pragma once

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct SpatialDropout2DOptions {
  std::string data_format = "channels_last";  // or "channels_first"
  std::optional<uint64_t> seed = std::nullopt;  // unseeded: derived from the layer name
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: rate in [0, 1). Input shape: (batch, rows, cols, channels). In training each
/// (example, channel) map is zeroed with probability rate and the rest scaled by 1 / (1 - rate).
class SpatialDropout2D : public Layer {
 public:
  explicit SpatialDropout2D(double rate, SpatialDropout2DOptions options = {});
  static SpatialDropout2D from_config(const std::string& config_json);
  std::string class_name() const override { return "SpatialDropout2D"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;
  std::vector<Variable> random_state() const override;

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  double rate_;
  SpatialDropout2DOptions options_;
  Variable counter_;  // the step counter mixed into the key; not a weight
};

struct GaussianNoiseOptions {
  std::optional<uint64_t> seed = std::nullopt;  // unseeded: derived from the layer name
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: stddev >= 0. In training adds normal noise with mean 0 and that stddev to each element.
class GaussianNoise : public Layer {
 public:
  explicit GaussianNoise(double stddev, GaussianNoiseOptions options = {});
  static GaussianNoise from_config(const std::string& config_json);
  std::string class_name() const override { return "GaussianNoise"; }
  std::string get_config() const override;
  std::vector<Variable> random_state() const override;

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  double stddev_;
  GaussianNoiseOptions options_;
  Variable counter_;
};

}  // namespace kiln::keras
