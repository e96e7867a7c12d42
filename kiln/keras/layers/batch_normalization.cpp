// BatchNormalization: batch moments and the moving-average assignments in training, the
// moving statistics in inference, and the Keras config.
#include "kiln/keras/layers/batch_normalization.h"

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/trace/autocast_scope.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"

namespace kiln::keras {

namespace {
void check_momentum(const std::string& at, double momentum) {
  if (!(momentum >= 0 && momentum <= 1))
    KILN_THROW(ValueError, "[", at, "] expected momentum in [0, 1], received momentum=", momentum, ".");
}
}  // namespace

BatchNormalization::BatchNormalization(BatchNormalizationOptions options)
    : Layer(options.name, options.input_shape, options.dtype), options_(std::move(options)) {
  const std::string at = options_.name.empty() ? "BatchNormalization" : options_.name;
  check_momentum(at, options_.momentum);
  if (!(options_.epsilon > 0))
    KILN_THROW(ValueError, "[", at, "] expected epsilon > 0, received epsilon=", options_.epsilon, ".");
}

int BatchNormalization::resolve_axis(int rank) const {
  const int axis = options_.axis < 0 ? options_.axis + rank : options_.axis;
  if (axis <= 0 || axis >= rank)
    KILN_THROW(ValueError, "[", where(), "] axis=", options_.axis, " is not a feature axis of a rank-", rank,
               " input (the batch axis 0 cannot be normalized). Hint: use axis=-1 for channels_last.");
  return axis;
}

void BatchNormalization::build_weights(const Dims& input_shape) {
  const int axis = resolve_axis(static_cast<int>(input_shape.size()) + 1);
  const Dims shape = {input_shape[static_cast<size_t>(axis - 1)]};
  if (options_.scale) gamma_ = add_weight("gamma", shape, options_.gamma_initializer);
  if (options_.center) beta_ = add_weight("beta", shape, options_.beta_initializer);
  moving_mean_ = add_weight("moving_mean", shape, options_.moving_mean_initializer, /*trainable=*/false);
  moving_variance_ =
      add_weight("moving_variance", shape, options_.moving_variance_initializer, /*trainable=*/false);
}

Tensor BatchNormalization::call(const Tensor& input, bool training) {
  // Keras runs BatchNormalization in float32 under a 16-bit policy: the moments of bf16/f16
  // activations overflow or lose the moving averages' small updates. Variables are read as
  // stored (f32) and the output goes back to the compute dtype.
  trace::AutocastScope stored(std::nullopt);
  const DType out_dtype = input.dtype();
  const Tensor x = size_of(out_dtype) == 2 ? cast(input, DType::kF32) : input;
  const int rank = x.rank();
  const int64_t features = moving_mean_.shape().dim(0);
  const int axis = resolve_axis(rank);
  if (static_cast<size_t>(rank) != built_input_shape().size() + 1 || x.dim(axis) != features)
    KILN_THROW(ShapeError, "[", name(), "] expected input with ", features, " features on axis ", axis,
               " (built for per-example shape ", dims_to_string(built_input_shape()), "), received ", x.shape(), ".");
  std::vector<int> axes;  // every axis but the feature axis, the batch included
  for (int i = 0; i < rank; ++i)
    if (i != axis) axes.push_back(i);
  Dims keep(static_cast<size_t>(rank), 1);  // per-feature values shaped to broadcast against x
  keep[static_cast<size_t>(axis)] = features;
  auto per_feature = [&](const Tensor& v) { return reshape(v, keep); };

  // Keras 2.1+ and 3: a frozen BatchNormalization (freezing a model freezes every layer in it)
  // runs in inference mode.
  if (!trainable()) training = false;
  Tensor m, var;
  if (training) {
    m = mean(x, axes, /*keepdims=*/true);
    Tensor centered = x - m;
    var = mean(centered * centered, axes, /*keepdims=*/true);  // biased, as the output uses
    trace::PauseTapes pause;  // the moving averages are state, not part of the loss
    const double n = static_cast<double>(x.shape().num_elements() / features);
    const bool fused = rank == 4 && (axis == 1 || axis == 3);  // tf.keras 2.x's fused kernel
    Tensor batch_var = reshape(var, {features});
    if (fused && n > 1) batch_var = batch_var * (n / (n - 1));
    const double rate = 1.0 - options_.momentum;
    if (n > 0) {  // an empty batch (a replica's share of a short partial batch) has no moments
      moving_mean_.assign(moving_mean_ - (moving_mean_ - reshape(m, {features})) * rate);
      moving_variance_.assign(moving_variance_ - (moving_variance_ - batch_var) * rate);
    }
  } else {
    m = per_feature(moving_mean_);
    var = per_feature(moving_variance_);
  }
  Tensor a = rsqrt(var + options_.epsilon);
  if (options_.scale) a = a * per_feature(gamma_);
  Tensor y = (x - m) * a;
  if (options_.center) y = y + per_feature(beta_);
  return cast(y, out_dtype);
}

std::string BatchNormalization::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  // Keras 2 keeps the int until build, then the validated list of positive axes.
  if (built()) j["axis"] = {resolve_axis(static_cast<int>(built_input_shape().size()) + 1)};
  else if (axis_was_list_) j["axis"] = {options_.axis};
  else j["axis"] = options_.axis;
  j["momentum"] = options_.momentum;
  j["epsilon"] = options_.epsilon;
  j["center"] = options_.center;
  j["scale"] = options_.scale;
  j["beta_initializer"] = internal::initializer_json(options_.beta_initializer);
  j["gamma_initializer"] = internal::initializer_json(options_.gamma_initializer);
  j["moving_mean_initializer"] = internal::initializer_json(options_.moving_mean_initializer);
  j["moving_variance_initializer"] = internal::initializer_json(options_.moving_variance_initializer);
  for (const char* key : {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"})
    j[key] = nullptr;
  return j.dump();
}

// BatchNormalization's keys in every Keras release: tf.keras 2.x writes renorm and
// virtual_batch_size only when set, Keras 3.14+ renorm always; Keras 3's synchronized asks
// for statistics across replicas. Regularizers and constraints load when null.
constexpr internal::ConfigKey kBatchNormalizationKeys[] = {
    {"axis"},
    {"momentum"},
    {"epsilon"},
    {"center"},
    {"scale"},
    {"beta_initializer"},
    {"gamma_initializer"},
    {"moving_mean_initializer"},
    {"moving_variance_initializer"},
    {"beta_regularizer", "null", internal::kNoRegularizerHere},
    {"gamma_regularizer", "null", internal::kNoRegularizerHere},
    {"beta_constraint", "null", internal::kNoRegularizerHere},
    {"gamma_constraint", "null", internal::kNoRegularizerHere},
    {"renorm", "false", "Kiln does not build batch renormalization"},
    {"renorm_clipping", "null", "Kiln does not build batch renormalization"},
    {"renorm_momentum"},  // used only with renorm
    {"virtual_batch_size", "null", "Kiln normalizes over the whole batch"},
    {"synchronized", "false", "Kiln's BatchNormalization keeps per-replica batch statistics"}};
void BatchNormalization::set_momentum(double momentum) {
  check_momentum(where(), momentum);
  self_as<BatchNormalization>().options_.momentum = momentum;
}

BatchNormalization BatchNormalization::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "BatchNormalization.from_config");
  internal::expect_layer_keys(j, {kBatchNormalizationKeys}, "BatchNormalization");
  BatchNormalizationOptions o;
  bool axis_was_list = false;
  if (j.contains("axis")) {
    const nlohmann::json& axis = j["axis"];
    if (axis.is_array()) {
      if (axis.size() != 1)
        KILN_THROW(ConfigError, "[BatchNormalization.from_config] axis=", axis.dump(),
                   ": Kiln normalizes over one feature axis. Hint: use a single axis.");
      o.axis = axis[0].get<int>();
      axis_was_list = true;
    } else {
      o.axis = axis.get<int>();
    }
  }
  o.momentum = j.value("momentum", o.momentum);
  o.epsilon = j.value("epsilon", o.epsilon);
  o.center = j.value("center", o.center);
  o.scale = j.value("scale", o.scale);
  for (auto [key, init] : {std::pair{"beta_initializer", &o.beta_initializer},
                           std::pair{"gamma_initializer", &o.gamma_initializer},
                           std::pair{"moving_mean_initializer", &o.moving_mean_initializer},
                           std::pair{"moving_variance_initializer", &o.moving_variance_initializer}})
    if (j.contains(key)) *init = internal::initializer_from_json(j[key]);
  o.input_shape = internal::input_shape_from(j);
  o.name = j.value("name", "");
  BatchNormalization bn(o);
  bn.axis_was_list_ = axis_was_list;
  bn.set_trainable(j.value("trainable", true));
  return bn;
}

}  // namespace kiln::keras
