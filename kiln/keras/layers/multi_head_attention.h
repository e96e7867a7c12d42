// MultiHeadAttention: scaled dot-product attention over several heads with Keras's weight
// layout (keras.layers.MultiHeadAttention): query/key/value/attention_output EinsumDense
// kernels of shape (dim, heads, key_dim) ... (heads, value_dim, output_dim).
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "kiln/keras/layers/dropout.h"
#include "kiln/keras/layers/layer.h"

namespace kiln::keras {

struct MultiHeadAttentionOptions {
  int64_t value_dim = 0;  // 0: key_dim
  double dropout = 0.0;   // on the attention probabilities, in training
  bool use_bias = true;
  int64_t output_shape = 0;  // 0: the query's last dim
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  std::string name = "";
  /// The dtype policy (a Policy or its name: "mixed_bfloat16"); none takes the global policy.
  std::optional<mixed_precision::Policy> dtype = std::nullopt;
};

/// Keras call arguments besides the tensors.
struct AttentionCallOptions {
  /// Position t attends only to positions <= t (a decoder's self-attention).
  bool use_causal_mask = false;
  bool training = false;
};

/// The eight projection tensors of one attention layer (undefined biases when use_bias=false).
/// Shapes: query_kernel (dq, H, K), key_kernel (dk, H, K), value_kernel (dv, H, V),
/// output_kernel (H, V, O); biases (H, K), (H, K), (H, V), (O).
struct AttentionWeights {
  Tensor query_kernel, query_bias, key_kernel, key_bias, value_kernel, value_bias, output_kernel, output_bias;
};

/// query (B, T, dq), value (B, S, dv), key (B, S, dk) -> (B, T, O):
/// softmax((q / sqrt(K)) k^T + mask) v per head, then the output projection. `dropout` (may
/// be empty) is applied to the attention probabilities (B * H, T, S).
Tensor multi_head_attention(const Tensor& query, const Tensor& value, const Tensor& key, const AttentionWeights& w,
                            bool use_causal_mask, const std::function<Tensor(const Tensor&)>& dropout = {});

/// Args: num_heads, key_dim. Inputs: query (batch, T, dq), value (batch, S, dv) and
/// optionally key (batch, S, dk; defaults to value). Output: (batch, T, output_shape or dq).
class MultiHeadAttention : public Layer {
 public:
  MultiHeadAttention(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options = {});
  static MultiHeadAttention from_config(const std::string& config_json);
  std::string class_name() const override { return "MultiHeadAttention"; }
  std::string get_config() const override;
  Dims compute_output_shape_multi(const std::vector<Dims>& input_shapes) const override;
  std::vector<std::string> call_arg_names() const override { return {"value", "key"}; }

  using Layer::operator();
  /// mha(query, value[, key], {.use_causal_mask = true}) on tensors in a trace or eagerly.
  Tensor operator()(const Tensor& query, const Tensor& value, AttentionCallOptions options = {});
  Tensor operator()(const Tensor& query, const Tensor& value, const Tensor& key, AttentionCallOptions options = {});
  /// The same on KerasTensors (functional API); see Layer::operator() for ownership.
  KerasTensor operator()(const KerasTensor& query, const KerasTensor& value, AttentionCallOptions options = {}) &;
  KerasTensor operator()(const KerasTensor& query, const KerasTensor& value, AttentionCallOptions options = {}) &&;

  int64_t num_heads() const { return num_heads_; }
  int64_t key_dim() const { return key_dim_; }
  int64_t value_dim() const { return options_.value_dim > 0 ? options_.value_dim : key_dim_; }

 protected:
  void build_weights_multi(const std::vector<Dims>& input_shapes) override;
  Tensor call(const Tensor& x, bool training) override;
  Tensor call_multi(const std::vector<Tensor>& inputs, const CallFlags& flags, bool training) override;

 private:
  int64_t num_heads_, key_dim_;
  MultiHeadAttentionOptions options_;
  Variable query_kernel_, query_bias_, key_kernel_, key_bias_, value_kernel_, value_bias_, output_kernel_, output_bias_;
  std::shared_ptr<Dropout> dropout_;  // Keras's _dropout_layer
};

}  // namespace kiln::keras
