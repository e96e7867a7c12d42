// ReLU, LeakyReLU, PReLU and Softmax: elementwise selects (and one softmax) over the input.
#include "kiln/keras/layers/advanced_activations.h"

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"

namespace kiln::keras {
namespace {

std::string where(const std::string& name, const char* cls) { return name.empty() ? cls : name; }

}  // namespace

ReLU::ReLU(ReLUOptions options) : Layer(options.name, options.input_shape, options.dtype), options_(std::move(options)) {
  if (options_.max_value && *options_.max_value < 0)
    KILN_THROW(ValueError, "[", where(options_.name, "ReLU"), "] max_value must be >= 0, received ", *options_.max_value, ".");
  if (options_.negative_slope < 0)
    KILN_THROW(ValueError, "[", where(options_.name, "ReLU"), "] negative_slope must be >= 0, received ",
               options_.negative_slope, ".");
}

Tensor ReLU::call(const Tensor& x, bool /*training*/) {
  Tensor y = options_.threshold == 0 && options_.negative_slope == 0
                 ? maximum(x, 0.0)
                 : where(greater_equal(x, options_.threshold), x, options_.negative_slope * (x - options_.threshold));
  return options_.max_value ? minimum(y, *options_.max_value) : y;
}

std::string ReLU::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["max_value"] = options_.max_value ? nlohmann::json(*options_.max_value) : nlohmann::json(nullptr);
  j["negative_slope"] = options_.negative_slope;
  j["threshold"] = options_.threshold;
  return j.dump();
}

constexpr internal::ConfigKey kReLUKeys[] = {{"max_value"}, {"negative_slope"}, {"threshold"}};
ReLU ReLU::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "ReLU.from_config");
  internal::expect_layer_keys(j, {kReLUKeys}, "ReLU");
  ReLUOptions o = internal::guarded("ReLU.from_config", [&] {
    ReLUOptions r;
    if (j.contains("max_value") && !j["max_value"].is_null()) r.max_value = j["max_value"].get<double>();
    r.negative_slope = j.value("negative_slope", 0.0);
    r.threshold = j.value("threshold", 0.0);
    return r;
  });
  o.input_shape = internal::input_shape_from(j);
  o.name = j.value("name", "");
  ReLU l(o);
  l.set_trainable(j.value("trainable", true));
  return l;
}

LeakyReLU::LeakyReLU(double negative_slope, LayerOptions options)
    : Layer(options.name, options.input_shape, options.dtype), negative_slope_(negative_slope) {
  if (negative_slope < 0)
    KILN_THROW(ValueError, "[", where(options.name, "LeakyReLU"), "] negative_slope must be >= 0, received ",
               negative_slope, ".");
}

Tensor LeakyReLU::call(const Tensor& x, bool /*training*/) { return activations::leaky_relu(x, negative_slope_); }

std::string LeakyReLU::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["alpha"] = negative_slope_;
  return j.dump();
}

// Keras 2 calls the slope alpha, Keras 3 negative_slope.
constexpr internal::ConfigKey kLeakyReLUKeys[] = {{"alpha"}, {"negative_slope"}};
LeakyReLU LeakyReLU::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "LeakyReLU.from_config");
  internal::expect_layer_keys(j, {kLeakyReLUKeys}, "LeakyReLU");
  const double slope = internal::guarded("LeakyReLU.from_config", [&] {
    if (j.contains("negative_slope")) return j["negative_slope"].get<double>();  // Keras 3
    return j.value("alpha", activations::kLeakyReluLayerSlope);                  // Keras 2
  });
  LeakyReLU l(slope, {.input_shape = internal::input_shape_from(j), .name = j.value("name", "")});
  l.set_trainable(j.value("trainable", true));
  return l;
}

PReLU::PReLU(PReLUOptions options) : Layer(options.name, options.input_shape, options.dtype), options_(std::move(options)) {}

void PReLU::build_weights(const Dims& input_shape) {
  Dims shape = input_shape;
  for (int64_t axis : options_.shared_axes) {
    if (axis < 1 || axis > static_cast<int64_t>(shape.size()))
      KILN_THROW(ValueError, "[", name(), "] shared_axes=", dims_to_string(options_.shared_axes),
                 " must name axes 1..", shape.size(), " of the input (batch axis 0 excluded), received per-example shape ",
                 dims_to_string(input_shape), ".");
    shape[static_cast<size_t>(axis - 1)] = 1;
  }
  alpha_ = add_weight("alpha", shape, options_.alpha_initializer, /*trainable=*/true, options_.alpha_regularizer,
                      options_.alpha_constraint);
}

// x: (N, *dims); alpha: dims with 1 along shared axes, broadcast over them.
Tensor PReLU::call(const Tensor& x, bool /*training*/) {
  return where(greater_equal(x, 0.0), x, alpha_.read() * x);
}

std::string PReLU::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  internal::put_weight_fields(j, "alpha", options_.alpha_initializer, options_.alpha_regularizer, options_.alpha_constraint);
  j["shared_axes"] = options_.shared_axes.empty() ? nlohmann::json(nullptr) : nlohmann::json(options_.shared_axes);
  return j.dump();
}

constexpr internal::ConfigKey kPReLUKeys[] = {
    {"alpha_initializer"}, {"alpha_regularizer"}, {"alpha_constraint"}, {"shared_axes"}};
PReLU PReLU::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "PReLU.from_config");
  internal::expect_layer_keys(j, {kPReLUKeys}, "PReLU");
  PReLUOptions o;
  internal::guarded("PReLU.from_config", [&] {
    internal::get_weight_fields(j, "alpha", &o.alpha_initializer, &o.alpha_regularizer, &o.alpha_constraint);
    if (j.contains("shared_axes") && j["shared_axes"].is_number_integer()) o.shared_axes = {j["shared_axes"].get<int64_t>()};
    else if (j.contains("shared_axes") && !j["shared_axes"].is_null()) o.shared_axes = j["shared_axes"].get<Dims>();
    return 0;
  });
  o.input_shape = internal::input_shape_from(j);
  o.name = j.value("name", "");
  PReLU l(o);
  l.set_trainable(j.value("trainable", true));
  return l;
}

Softmax::Softmax(int axis, LayerOptions options) : Layer(options.name, options.input_shape, options.dtype), axis_(axis) {}

Tensor Softmax::call(const Tensor& x, bool /*training*/) {
  const int axis = axis_ < 0 ? axis_ + static_cast<int>(x.rank()) : axis_;
  if (axis < 1 || axis >= static_cast<int>(x.rank()))
    KILN_THROW(ValueError, "[", name(), "] axis=", axis_, " is out of range for inputs of rank ", x.rank(),
               " (batch included); softmax over the batch axis 0 is not supported.");
  if (axis == static_cast<int>(x.rank()) - 1) return activations::softmax(x);  // f32 for 16-bit inputs
  return softmax(x, axis);
}

std::string Softmax::get_config() const {
  nlohmann::json j = internal::base_config(*this);
  j["axis"] = axis_;
  return j.dump();
}

constexpr internal::ConfigKey kSoftmaxKeys[] = {{"axis"}};
Softmax Softmax::from_config(const std::string& config_json) {
  nlohmann::json j = internal::parse(config_json, "Softmax.from_config");
  internal::expect_layer_keys(j, {kSoftmaxKeys}, "Softmax");
  const int axis = internal::guarded("Softmax.from_config", [&] {
    // Keras 2 may write a list of one axis.
    if (j.contains("axis") && j["axis"].is_array() && j["axis"].size() == 1) return j["axis"][0].get<int>();
    return j.value("axis", -1);
  });
  Softmax l(axis, {.input_shape = internal::input_shape_from(j), .name = j.value("name", "")});
  l.set_trainable(j.value("trainable", true));
  return l;
}

}  // namespace kiln::keras
