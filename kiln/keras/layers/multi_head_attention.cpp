// MultiHeadAttention: projections as matmuls over the flattened (heads * dim) kernels, heads
// merged into the batch dim so both attention products are batched matmuls with one batch
// dim (the form oneDNN's matmul kernel takes; two batch dims fall back to the reference).
#include "kiln/keras/layers/multi_head_attention.h"

#include <cmath>
#include <optional>

#include "kiln/core/check.h"
#include "kiln/keras/activations.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {
namespace {

constexpr const char* kCausalFlag = "use_causal_mask";

// x (B, T, d) @ kernel (d, H, D) + bias (H, D) -> (B * H, T, D).
Tensor project_heads(const Tensor& x, const Tensor& kernel, const Tensor& bias) {
  const int64_t heads = kernel.dim(1), depth = kernel.dim(2);
  Tensor y = matmul(x, reshape(cast(kernel, x.dtype()), {kernel.dim(0), heads * depth}));
  if (bias.defined()) y = y + reshape(cast(bias, x.dtype()), {heads * depth});
  y = transpose(reshape(y, {x.dim(0), x.dim(1), heads, depth}), {0, 2, 1, 3});
  return reshape(y, {x.dim(0) * heads, x.dim(1), depth});
}

}  // namespace

Tensor multi_head_attention(const Tensor& query, const Tensor& value, const Tensor& key, const AttentionWeights& w,
                            bool use_causal_mask, const std::function<Tensor(const Tensor&)>& dropout) {
  const int64_t key_dim = w.query_kernel.dim(2);
  const int64_t batch = query.dim(0), heads = w.query_kernel.dim(1);
  Tensor q = project_heads(query, w.query_kernel, w.query_bias);  // (B * H, T, K)
  Tensor k = project_heads(key, w.key_kernel, w.key_bias);        // (B * H, S, K)
  Tensor v = project_heads(value, w.value_kernel, w.value_bias);  // (B * H, S, V)
  q = q * (1.0 / std::sqrt(static_cast<double>(key_dim)));        // Keras scales the query
  Tensor scores = dot_general(q, k, {.lhs_batch = {0}, .rhs_batch = {0}, .lhs_contracting = {2}, .rhs_contracting = {2}});
  if (use_causal_mask) {
    // Keras's causal mask: query position t sees key positions s <= t; the rest get -1e9
    // before the softmax (its large negative, so a row is never all -inf).
    const int64_t t = scores.dim(1), s = scores.dim(2);
    Tensor allowed = greater_equal(iota(Shape(DType::kI32, {t, s}), 0), iota(Shape(DType::kI32, {t, s}), 1));
    scores = where(broadcast_to(allowed, scores.dims()), scores, -1e9);
  }
  Tensor probs = activations::softmax(scores);  // (B * H, T, S); in f32 for 16-bit scores
  if (dropout) probs = dropout(probs);
  Tensor context = dot_general(probs, v, {.lhs_batch = {0}, .rhs_batch = {0}, .lhs_contracting = {2}, .rhs_contracting = {1}});
  // (B * H, T, V) -> (B, T, H * V) @ (H * V, O)
  const int64_t t = context.dim(1), value_dim = context.dim(2), out_dim = w.output_kernel.dim(2);
  context = reshape(context, {batch, heads, t, value_dim});
  Tensor merged = reshape(transpose(context, {0, 2, 1, 3}), {batch, t, heads * value_dim});
  Tensor out = matmul(merged, reshape(cast(w.output_kernel, merged.dtype()), {heads * value_dim, out_dim}));
  if (w.output_bias.defined()) out = out + cast(w.output_bias, out.dtype());
  return out;
}

MultiHeadAttention::MultiHeadAttention(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options)
    : Layer(options.name, {}, options.dtype), num_heads_(num_heads), key_dim_(key_dim), options_(std::move(options)) {
  if (num_heads <= 0 || key_dim <= 0 || options_.value_dim < 0 || options_.output_shape < 0)
    KILN_THROW(ValueError, "[MultiHeadAttention] expected num_heads > 0 and key_dim > 0 (value_dim, output_shape >= 0), "
               "received num_heads=", num_heads, ", key_dim=", key_dim, ", value_dim=", options_.value_dim,
               ", output_shape=", options_.output_shape, ".");
  if (options_.dropout < 0 || options_.dropout >= 1)
    KILN_THROW(ValueError, "[MultiHeadAttention] expected dropout in [0, 1), received dropout=", options_.dropout, ".");
}

Dims MultiHeadAttention::compute_output_shape_multi(const std::vector<Dims>& s) const {
  if (s.size() < 2 || s.size() > 3)
    KILN_THROW(ValueError, "[", name(), "] MultiHeadAttention expects query, value and optionally key, received ",
               s.size(), " input(s). Hint: mha(query, value) or mha(x, x) for self-attention.");
  for (const Dims& d : s)
    if (d.size() != 2)
      KILN_THROW(ShapeError, "[", name(), "] expected inputs of shape (batch, sequence, features), received per-example ",
                 dims_to_string(d), ". Hint: Kiln attends over one sequence axis (Keras's default attention_axes).");
  if (s[1][0] != s.back()[0])
    KILN_THROW(ShapeError, "[", name(), "] value and key need one sequence length, received ", dims_to_string(s[1]),
               " and ", dims_to_string(s.back()), ".");
  return {s[0][0], options_.output_shape > 0 ? options_.output_shape : s[0][1]};
}

void MultiHeadAttention::build_weights_multi(const std::vector<Dims>& s) {
  const int64_t out_dim = compute_output_shape_multi(s)[1];
  const int64_t dq = s[0][1], dv = s[1][1], dk = s.back()[1], h = num_heads_, k = key_dim_, v = value_dim();
  // Keras's creation order, which is also the HDF5 weight order.
  query_kernel_ = add_weight("query/kernel", {dq, h, k}, options_.kernel_initializer);
  if (options_.use_bias) query_bias_ = add_weight("query/bias", {h, k}, options_.bias_initializer);
  key_kernel_ = add_weight("key/kernel", {dk, h, k}, options_.kernel_initializer);
  if (options_.use_bias) key_bias_ = add_weight("key/bias", {h, k}, options_.bias_initializer);
  value_kernel_ = add_weight("value/kernel", {dv, h, v}, options_.kernel_initializer);
  if (options_.use_bias) value_bias_ = add_weight("value/bias", {h, v}, options_.bias_initializer);
  output_kernel_ = add_weight("attention_output/kernel", {h, v, out_dim}, options_.kernel_initializer);
  if (options_.use_bias) output_bias_ = add_weight("attention_output/bias", {out_dim}, options_.bias_initializer);
  if (options_.dropout > 0) dropout_ = std::make_shared<Dropout>(options_.dropout, DropoutOptions{.name = name() + "/dropout"});
}

Tensor MultiHeadAttention::call(const Tensor& /*x*/, bool /*training*/) {
  KILN_THROW(ValueError, "[", name(), "] MultiHeadAttention expects query and value, received one tensor. "
             "Hint: mha(x, x) for self-attention.");
}

Tensor MultiHeadAttention::call_multi(const std::vector<Tensor>& inputs, const CallFlags& flags, bool training) {
  std::vector<Dims> shapes;
  for (const Tensor& x : inputs) shapes.emplace_back(x.dims().begin() + 1, x.dims().end());
  compute_output_shape_multi(shapes);
  if (shapes[0][1] != query_kernel_.shape().dim(0) || shapes[1][1] != value_kernel_.shape().dim(0) ||
      shapes.back()[1] != key_kernel_.shape().dim(0))
    KILN_THROW(ShapeError, "[", name(), "] built for query/value/key features ", query_kernel_.shape().dim(0), "/",
               value_kernel_.shape().dim(0), "/", key_kernel_.shape().dim(0), ", received ", inputs[0].shape(), ", ",
               inputs[1].shape(), (inputs.size() > 2 ? ", " + inputs[2].shape().to_string() : std::string()), ".");
  bool causal = false;
  for (const auto& [flag, on] : flags) {
    if (flag != kCausalFlag)
      KILN_THROW(ValueError, "[", name(), "] unknown call flag '", flag, "'; MultiHeadAttention takes use_causal_mask.");
    causal = on;
  }
  auto read = [](const Variable& v) { return v.defined() ? v.read() : Tensor(); };
  AttentionWeights w{read(query_kernel_), read(query_bias_), read(key_kernel_),    read(key_bias_),
                     read(value_kernel_), read(value_bias_), read(output_kernel_), read(output_bias_)};
  std::function<Tensor(const Tensor&)> drop;
  if (dropout_ && training) drop = [this](const Tensor& p) { return (*dropout_)(p, /*training=*/true); };
  return multi_head_attention(inputs[0], inputs[1], inputs.size() > 2 ? inputs[2] : inputs[1], w, causal, drop);
}

Tensor MultiHeadAttention::operator()(const Tensor& query, const Tensor& value, AttentionCallOptions options) {
  return (*this)(std::vector<Tensor>{query, value}, options.training, CallFlags{{kCausalFlag, options.use_causal_mask}});
}

Tensor MultiHeadAttention::operator()(const Tensor& query, const Tensor& value, const Tensor& key,
                                      AttentionCallOptions options) {
  return (*this)(std::vector<Tensor>{query, value, key}, options.training, CallFlags{{kCausalFlag, options.use_causal_mask}});
}

KerasTensor MultiHeadAttention::operator()(const KerasTensor& query, const KerasTensor& value, AttentionCallOptions options) & {
  return static_cast<Layer&>(*this)({query, value}, CallFlags{{kCausalFlag, options.use_causal_mask}});
}

KerasTensor MultiHeadAttention::operator()(const KerasTensor& query, const KerasTensor& value, AttentionCallOptions options) && {
  return static_cast<Layer&&>(*this)({query, value}, CallFlags{{kCausalFlag, options.use_causal_mask}});
}

std::string MultiHeadAttention::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["num_heads"] = num_heads_;
  j["key_dim"] = key_dim_;
  j["value_dim"] = value_dim();
  j["dropout"] = options_.dropout;
  j["use_bias"] = options_.use_bias;
  j["output_shape"] = options_.output_shape > 0 ? nlohmann::json(options_.output_shape) : nlohmann::json(nullptr);
  j["attention_axes"] = nlohmann::json::array({1});  // Keras's default once built: the sequence axis
  j["kernel_initializer"] = internal::initializer_json(options_.kernel_initializer);
  j["bias_initializer"] = internal::initializer_json(options_.bias_initializer);
  for (const char* key : {"kernel_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint",
                          "bias_constraint"})
    j[key] = nullptr;
  // Keras records the built input shapes so a loaded layer can build before its first call.
  const std::vector<Dims>& s = built_input_shapes();
  auto shape = [&](size_t i) {
    if (!built() || s.size() <= i) return nlohmann::json(nullptr);
    nlohmann::json d = nlohmann::json::array({nullptr});
    for (int64_t x : s[i]) d.push_back(x);
    return d;
  };
  j["query_shape"] = shape(0);
  j["value_shape"] = shape(1);
  j["key_shape"] = built() ? shape(s.size() - 1) : nlohmann::json(nullptr);
  return j.dump();
}

// MultiHeadAttention's keys in tf.keras 2.x and Keras 3: tf.keras's query_shape, key_shape and
// value_shape record build shapes (Kiln builds on the first call); seed seeds the attention
// dropout, which Kiln draws its own way; Keras 3.14-3.15's gate and sliding window load when
// off; regularizers and constraints when null.
constexpr internal::ConfigKey kMultiHeadAttentionKeys[] = {
    {"num_heads"},
    {"key_dim"},
    {"value_dim"},
    {"dropout"},
    {"use_bias"},
    {"output_shape"},
    {"attention_axes"},
    {"kernel_initializer"},
    {"bias_initializer"},
    {"kernel_regularizer", "null", internal::kNoRegularizerHere},
    {"bias_regularizer", "null", internal::kNoRegularizerHere},
    {"kernel_constraint", "null", internal::kNoRegularizerHere},
    {"bias_constraint", "null", internal::kNoRegularizerHere},
    {"query_shape"},
    {"key_shape"},
    {"value_shape"},
    {"seed"},
    {"use_gate", "false", "Kiln's MultiHeadAttention has no output gate"},
    {"sliding_window", "null", "Kiln's MultiHeadAttention attends over the whole sequence"}};
MultiHeadAttention MultiHeadAttention::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "MultiHeadAttention.from_config");
  internal::expect_layer_keys(j, {kMultiHeadAttentionKeys}, "MultiHeadAttention");
  if (j.contains("attention_axes") && !j["attention_axes"].is_null() && j["attention_axes"] != nlohmann::json::array({1}))
    KILN_THROW(ConfigError, "[MultiHeadAttention.from_config] Kiln attends over the sequence axis only, received attention_axes=",
               j["attention_axes"].dump(), ".");
  MultiHeadAttentionOptions o;
  if (j.contains("value_dim") && j["value_dim"].is_number_integer()) o.value_dim = j["value_dim"].get<int64_t>();
  o.dropout = j.value("dropout", 0.0);
  o.use_bias = j.value("use_bias", true);
  if (j.contains("output_shape") && !j["output_shape"].is_null()) {
    const nlohmann::json& shape = j["output_shape"];
    if (shape.is_array() && shape.size() != 1)
      KILN_THROW(ConfigError, "[MultiHeadAttention.from_config] Kiln supports a single output_shape dim, received ", shape.dump(), ".");
    o.output_shape = shape.is_array() ? shape[0].get<int64_t>() : shape.get<int64_t>();
  }
  if (j.contains("kernel_initializer")) o.kernel_initializer = internal::initializer_from_json(j["kernel_initializer"]);
  if (j.contains("bias_initializer")) o.bias_initializer = internal::initializer_from_json(j["bias_initializer"]);
  o.name = j.value("name", "");
  MultiHeadAttention m(internal::int_field(j, "num_heads", "MultiHeadAttention"),
                       internal::int_field(j, "key_dim", "MultiHeadAttention"), o);
  m.set_trainable(j.value("trainable", true));
  // tf.keras 2 builds a layer whose config records its input shapes (_build_from_signature),
  // so the config of the layer made from a built layer's config is that config again.
  auto per_example = [&](const char* key) -> std::optional<Dims> {
    if (!j.contains(key) || j[key].is_null()) return std::nullopt;
    Dims d;
    for (size_t i = 1; i < j[key].size(); ++i) {
      if (!j[key][i].is_number_integer()) return std::nullopt;  // None: built at the first call
      d.push_back(j[key][i].get<int64_t>());
    }
    return d;
  };
  const std::optional<Dims> query = per_example("query_shape"), value = per_example("value_shape"),
                            key = per_example("key_shape");
  if (query && value && key) m.build_multi(*key == *value ? std::vector<Dims>{*query, *value} : std::vector<Dims>{*query, *value, *key});
  return m;
}

}  // namespace kiln::keras
