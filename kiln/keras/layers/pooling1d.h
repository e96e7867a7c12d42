// MaxPooling1D / AveragePooling1D over (batch, steps, features) sequences, the global max
// poolings GlobalMaxPooling1D / GlobalMaxPooling2D and GlobalAveragePooling1D (keras.layers).
// The windowed ones run the 2-D pooling op over a size-1 width axis.
#pragma once

#include "kiln/keras/layers/layer.h"
#include "kiln/keras/layers/layer_options.h"

namespace kiln::keras {

/// Keras 1-D pooling keyword arguments with their defaults.
struct Pooling1DOptions {
  int64_t strides = 0;  // 0 = pool_size (Keras strides=None)
  std::string padding = "valid";  // or "same"
  std::string data_format = "channels_last";  // or "channels_first": (batch, features, steps)
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: pool_size. Input shape: (batch, steps, features). Output: (batch, out_steps,
/// features) with out = ceil(steps / stride) for "same", floor((steps - pool) / stride) + 1
/// for "valid".
class Pooling1D : public Layer {
 public:
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  Pooling1D(const char* class_name, bool is_max, int64_t pool_size, Pooling1DOptions options);
  /// pool_size, the options and `trainable` from a Keras config.
  static Pooling1DOptions options_from_config(const std::string& config_json, const char* where, int64_t* pool_size,
                                              bool* trainable);
  /// Layer class L (MaxPooling1D or AveragePooling1D) from a Keras config.
  template <typename L>
  static L from_config_as(const std::string& config_json, const char* where);
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::string where() const { return name().empty() ? class_name() : name(); }

  bool is_max_;
  int64_t pool_size_;
  Pooling1DOptions options_;  // strides resolved (never 0)
};

class MaxPooling1D : public Pooling1D {
 public:
  explicit MaxPooling1D(int64_t pool_size = 2, Pooling1DOptions options = {})
      : Pooling1D("MaxPooling1D", true, pool_size, std::move(options)) {}
  static MaxPooling1D from_config(const std::string& config_json);
  std::string class_name() const override { return "MaxPooling1D"; }
};

class AveragePooling1D : public Pooling1D {
 public:
  explicit AveragePooling1D(int64_t pool_size = 2, Pooling1DOptions options = {})
      : Pooling1D("AveragePooling1D", false, pool_size, std::move(options)) {}
  static AveragePooling1D from_config(const std::string& config_json);
  std::string class_name() const override { return "AveragePooling1D"; }
};

struct GlobalPoolingOptions {
  std::string data_format = "channels_last";  // or "channels_first"
  bool keepdims = false;  // true keeps the pooled axes as size 1
  Dims input_shape = {};
  std::string name = "";
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// The maximum (or mean) over the spatial axes: `rank` 1 takes (batch, steps, features) to
/// (batch, features), rank 2 takes (batch, rows, cols, channels) to (batch, channels).
class GlobalPooling : public Layer {
 public:
  Dims compute_output_shape(const Dims& input_shape) const override;
  std::string get_config() const override;

 protected:
  GlobalPooling(const char* class_name, size_t rank, bool is_max, GlobalPoolingOptions options);
  static GlobalPoolingOptions options_from_config(const std::string& config_json, const char* where, bool* trainable);
  /// Layer class L from a Keras config.
  template <typename L>
  static L from_config_as(const std::string& config_json, const char* where);
  Tensor call(const Tensor& x, bool training) override;
  /// The reduced axes of an input (after the batch, or after the channels for channels_first).
  std::vector<int> spatial_axes() const;
  const GlobalPoolingOptions& options() const { return options_; }

 private:
  size_t rank_;
  bool is_max_;
  GlobalPoolingOptions options_;
};

class GlobalMaxPooling1D : public GlobalPooling {
 public:
  explicit GlobalMaxPooling1D(GlobalPoolingOptions options = {})
      : GlobalPooling("GlobalMaxPooling1D", 1, true, std::move(options)) {}
  static GlobalMaxPooling1D from_config(const std::string& config_json);
  std::string class_name() const override { return "GlobalMaxPooling1D"; }
};

class GlobalMaxPooling2D : public GlobalPooling {
 public:
  explicit GlobalMaxPooling2D(GlobalPoolingOptions options = {})
      : GlobalPooling("GlobalMaxPooling2D", 2, true, std::move(options)) {}
  static GlobalMaxPooling2D from_config(const std::string& config_json);
  std::string class_name() const override { return "GlobalMaxPooling2D"; }
};

/// The mean over the steps: (batch, steps, features) -> (batch, features); channels_first
/// takes (batch, features, steps). With a mask (Embedding(mask_zero) or Masking before it) it
/// is Keras's masked mean, sum(x * mask) / sum(mask) over the steps: the unmasked steps'
/// mean, and 0 / 0 = NaN for a row whose steps are all masked, as in Keras. The mask stops here.
class GlobalAveragePooling1D : public GlobalPooling {
 public:
  explicit GlobalAveragePooling1D(GlobalPoolingOptions options = {})
      : GlobalPooling("GlobalAveragePooling1D", 1, false, std::move(options)) {}
  /// Keras's compute_mask: none comes out.
  Tensor compute_mask(const Tensor& /*x*/, const Tensor& /*mask*/) const override { return Tensor(); }
  static GlobalAveragePooling1D from_config(const std::string& config_json);
  std::string class_name() const override { return "GlobalAveragePooling1D"; }

 protected:
  Tensor call_masked(const Tensor& x, const Tensor& mask, bool training) override;
};

}  // namespace kiln::keras
