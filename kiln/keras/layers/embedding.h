// Embedding: maps integer ids to rows of a trainable table (keras.layers.Embedding).
#pragma once

#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct EmbeddingOptions {
  Initializer embeddings_initializer = Initializer("random_uniform");  // uniform(-0.05, 0.05)
  /// Id 0 is padding: the output carries the mask ids != 0 for the recurrent layers after it.
  bool mask_zero = false;
  Dims input_shape = {};  // Keras input_length as a shape, e.g. {64}
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Args: input_dim (vocabulary size), output_dim. Input: integer ids (batch, ...), cast to
/// i32; ids outside [0, input_dim) clamp to the nearest row. Output: (batch, ..., output_dim).
/// Weight "embeddings": (input_dim, output_dim). The gradient is a scatter_add of rows.
class Embedding : public Layer {
 public:
  Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options = {});
  static Embedding from_config(const std::string& config_json);
  std::string class_name() const override { return "Embedding"; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  /// ids != 0 with mask_zero, else none.
  Tensor compute_mask(const Tensor& x, const Tensor& mask) const override;
  std::string get_config() const override;
  const Variable& embeddings() const { return self_as<Embedding>().embeddings_; }

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t input_dim_, output_dim_;
  EmbeddingOptions options_;
  Variable embeddings_;
};

}  // namespace kiln::keras
