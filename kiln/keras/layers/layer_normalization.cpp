// LayerNormalization: the moments over one axis, composed from trace ops (mean, rsqrt), so the
// gradient comes from the ops' VJPs.
#include "kiln/keras/layers/layer_normalization.h"

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/trace/autocast_scope.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {

Tensor layer_normalization(const Tensor& x, const Tensor& gamma, const Tensor& beta, int axis, double epsilon) {
  const int a = axis < 0 ? axis + x.rank() : axis;
  Tensor centered = x - mean(x, {a}, /*keepdims=*/true);
  Tensor variance = mean(centered * centered, {a}, /*keepdims=*/true);
  Tensor y = centered * rsqrt(variance + epsilon);
  // gamma, beta: (x.dim(a)) broadcast along every other axis.
  if (gamma.defined()) y = y * broadcast_in_dim(cast(gamma, x.dtype()), x.dims(), {a});
  if (beta.defined()) y = y + broadcast_in_dim(cast(beta, x.dtype()), x.dims(), {a});
  return y;
}

LayerNormalization::LayerNormalization(LayerNormalizationOptions options)
    : Layer(options.name, options.input_shape, options.dtype), options_(std::move(options)) {
  if (!(options_.epsilon > 0))
    KILN_THROW(ValueError, "[LayerNormalization] expected epsilon > 0, received epsilon=", options_.epsilon, ".");
}

void LayerNormalization::build_weights(const Dims& input_shape) {
  const int rank = static_cast<int>(input_shape.size()) + 1;
  const int axis = options_.axis < 0 ? options_.axis + rank : options_.axis;
  if (axis < 1 || axis >= rank)
    KILN_THROW(ValueError, "[", name(), "] axis=", options_.axis, " is out of range for inputs of rank ", rank,
               " (batch included); LayerNormalization normalizes within each example.");
  const int64_t dim = input_shape[static_cast<size_t>(axis - 1)];
  if (options_.scale) gamma_ = add_weight("gamma", {dim}, options_.gamma_initializer);
  if (options_.center) beta_ = add_weight("beta", {dim}, options_.beta_initializer);
}

Tensor LayerNormalization::call(const Tensor& input, bool /*training*/) {
  // As Keras: a 16-bit input is normalized in float32 with gamma and beta as stored (f32), and
  // the output returns to the compute dtype.
  trace::AutocastScope stored(std::nullopt);
  const Tensor x = size_of(input.dtype()) == 2 ? cast(input, DType::kF32) : input;
  const int axis = options_.axis < 0 ? options_.axis + x.rank() : options_.axis;
  const int64_t dim = gamma_.defined() ? gamma_.shape().dim(0) : beta_.defined() ? beta_.shape().dim(0) : x.dim(axis);
  if (axis < 1 || axis >= x.rank() || x.dim(axis) != dim)
    KILN_THROW(ShapeError, "[", name(), "] expected input with dim ", dim, " on axis ", options_.axis,
               ", received ", x.shape(), ".");
  return cast(layer_normalization(x, gamma_.defined() ? gamma_.read() : Tensor(),
                                  beta_.defined() ? beta_.read() : Tensor(), axis, options_.epsilon),
              input.dtype());
}

std::string LayerNormalization::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  // Keras 2 stores the axes as a list; once built they are non-negative (batch included).
  int axis = options_.axis;
  if (built() && axis < 0) axis += static_cast<int>(built_input_shape().size()) + 1;
  j["axis"] = nlohmann::json::array({axis});
  j["epsilon"] = options_.epsilon;
  j["center"] = options_.center;
  j["scale"] = options_.scale;
  j["beta_initializer"] = internal::initializer_json(options_.beta_initializer);
  j["gamma_initializer"] = internal::initializer_json(options_.gamma_initializer);
  for (const char* key : {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"}) j[key] = nullptr;
  return j.dump();
}

// LayerNormalization's keys in every Keras release; regularizers and constraints load when
// null, Keras 3's rms_scaling when off.
constexpr internal::ConfigKey kLayerNormalizationKeys[] = {
    {"axis"},
    {"epsilon"},
    {"center"},
    {"scale"},
    {"beta_initializer"},
    {"gamma_initializer"},
    {"beta_regularizer", "null", internal::kNoRegularizerHere},
    {"gamma_regularizer", "null", internal::kNoRegularizerHere},
    {"beta_constraint", "null", internal::kNoRegularizerHere},
    {"gamma_constraint", "null", internal::kNoRegularizerHere},
    {"rms_scaling", "false", "Kiln's LayerNormalization centers and scales by the standard deviation"}};
LayerNormalization LayerNormalization::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "LayerNormalization.from_config");
  internal::expect_layer_keys(j, {kLayerNormalizationKeys}, "LayerNormalization");
  LayerNormalizationOptions o;
  if (j.contains("axis")) {
    const nlohmann::json& axis = j["axis"];
    if (axis.is_array() && axis.size() != 1)
      KILN_THROW(ConfigError, "[LayerNormalization.from_config] Kiln normalizes over one axis, received axis=",
                 axis.dump(), ".");
    o.axis = axis.is_array() ? axis[0].get<int>() : axis.get<int>();
  }
  o.epsilon = j.value("epsilon", o.epsilon);
  o.center = j.value("center", o.center);
  o.scale = j.value("scale", o.scale);
  if (j.contains("beta_initializer")) o.beta_initializer = internal::initializer_from_json(j["beta_initializer"]);
  if (j.contains("gamma_initializer")) o.gamma_initializer = internal::initializer_from_json(j["gamma_initializer"]);
  o.input_shape = internal::input_shape_from(j);
  o.name = j.value("name", "");
  LayerNormalization l(o);
  l.set_trainable(j.value("trainable", true));
  return l;
}

}  // namespace kiln::keras
