// Embedding: one gather of table rows (its VJP is scatter_add into the table's gradient).
#include "kiln/keras/layers/embedding.h"

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/trace/autocast_scope.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {

Embedding::Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options)
    : Layer(options.name, options.input_shape, options.dtype), input_dim_(input_dim), output_dim_(output_dim), options_(std::move(options)) {
  if (input_dim <= 0 || output_dim <= 0)
    KILN_THROW(ValueError, "[Embedding] expected input_dim > 0 and output_dim > 0, received input_dim=", input_dim,
               ", output_dim=", output_dim, ".");
}

Dims Embedding::compute_output_shape(const Dims& input_shape) const {
  Dims out = input_shape;
  out.push_back(output_dim_);
  return out;
}

void Embedding::build_weights(const Dims& /*input_shape*/) {
  if (size_of(variable_dtype()) == 2)
    KILN_THROW(ValueError, "[", name(), "] Embedding cannot run under the dtype policy '", dtype_policy().name(),
               "': its gradient is a scatter-add into the table, which Kiln runs in float32 or float64 only, and a ",
               variable_dtype(), " table would lose the rows' small updates. Hint: use '",
               variable_dtype() == DType::kBF16 ? "mixed_bfloat16" : "mixed_float16",
               "' (a float32 table, ", variable_dtype(), " outputs).");
  embeddings_ = add_weight("embeddings", {input_dim_, output_dim_}, options_.embeddings_initializer);
}

Tensor Embedding::call(const Tensor& x, bool /*training*/) {
  // Gather from the table as stored, then cast the rows: the same values as gathering from a
  // cast table, but the gradient's scatter_add runs in the table's f32 (the CPU backend's
  // scatter_add is f32/f64 only) and only the gathered rows are converted.
  trace::AutocastScope stored(std::nullopt);
  return cast(take(embeddings_.read(), cast(x, DType::kI32), /*axis=*/0), compute_dtype());
}

Tensor Embedding::compute_mask(const Tensor& x, const Tensor& /*mask*/) const {
  if (!options_.mask_zero) return Tensor();
  return not_equal(cast(x, DType::kI32), Tensor::scalar(0, DType::kI32));
}

std::string Embedding::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["input_dim"] = input_dim_;
  j["output_dim"] = output_dim_;
  j["embeddings_initializer"] = internal::initializer_json(options_.embeddings_initializer);
  for (const char* key : {"embeddings_regularizer", "activity_regularizer", "embeddings_constraint"}) j[key] = nullptr;
  j["mask_zero"] = options_.mask_zero;
  j["input_length"] = options_.input_shape.size() == 1 ? nlohmann::json(options_.input_shape[0]) : nlohmann::json(nullptr);
  return j.dump();
}

// Embedding's keys in every Keras release (input_length: Keras 2); its regularizer and
// constraint are not built, so they load only when null.
constexpr internal::ConfigKey kEmbeddingKeys[] = {
    {"input_dim"},
    {"output_dim"},
    {"embeddings_initializer"},
    {"embeddings_regularizer", "null", internal::kNoRegularizerHere},
    {"embeddings_constraint", "null", internal::kNoRegularizerHere},
    {"mask_zero"},
    {"input_length"}};
Embedding Embedding::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Embedding.from_config");
  internal::expect_layer_keys(j, {kEmbeddingKeys, internal::lora_and_quantization_keys()}, "Embedding");
  EmbeddingOptions o;
  o.mask_zero = internal::guarded("Embedding.from_config", [&] { return j.value("mask_zero", false); });
  if (j.contains("embeddings_initializer")) o.embeddings_initializer = internal::initializer_from_json(j["embeddings_initializer"]);
  o.input_shape = internal::input_shape_from(j);
  if (o.input_shape.empty() && j.contains("input_length") && j["input_length"].is_number_integer())
    o.input_shape = {internal::int_field(j, "input_length", "Embedding")};
  o.name = j.value("name", "");
  Embedding e(internal::int_field(j, "input_dim", "Embedding"), internal::int_field(j, "output_dim", "Embedding"), o);
  e.set_trainable(j.value("trainable", true));
  return e;
}

}  // namespace kiln::keras
