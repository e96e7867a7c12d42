// Layer base: naming, build-on-first-call, weights and the shared config fields.
#include "kiln/keras/layers/layer.h"

#include <cctype>
#include <regex>

#include "kiln/core/check.h"
#include "kiln/keras/activations.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/runtime/backend.h"
#include "kiln/trace/autocast_scope.h"
#include "kiln/trace/eager.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/trace_context.h"

namespace kiln::keras {

std::string NameScope::unique(const std::string& base) {
  std::string candidate = base;
  int& suffix = next_suffix_[base];
  while (taken_.count(candidate)) candidate = base + "_" + std::to_string(++suffix);
  taken_[candidate] = true;
  return candidate;
}

// Keras's two regex passes verbatim, so digits join like Keras: Conv2D -> conv2d,
// MaxPooling2D -> max_pooling2d, Conv2DTranspose -> conv2d_transpose.
std::string to_snake_case(const std::string& class_name) {
  std::string out = std::regex_replace(class_name, std::regex("(.)([A-Z][a-z0-9]+)"), "$1_$2");
  out = std::regex_replace(out, std::regex("([a-z])([A-Z])"), "$1_$2");
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

namespace {

// Keras's autocast of a call's inputs: floating tensors to the compute dtype, others (indices,
// masks) as they are.
Tensor autocast_input(const Tensor& x, const Layer& layer) {
  if (!layer.autocast() || !is_floating(x.dtype()) || x.dtype() == layer.compute_dtype()) return x;
  return cast(x, layer.compute_dtype());
}

std::optional<DType> autocast_dtype(const Layer& layer) {
  return layer.autocast() ? std::optional<DType>(layer.compute_dtype()) : std::nullopt;
}

}  // namespace

void Layer::set_dtype_policy(const mixed_precision::Policy& policy) {
  if (body_) return body_->set_dtype_policy(policy);
  if (built_ && !(policy == policy_))
    KILN_THROW(ValueError, "[", name_, "] cannot change the dtype policy of a built layer from '", policy_.name(),
               "' to '", policy.name(), "': its variables exist. Hint: pass {.dtype = \"", policy.name(),
               "\"} when making the layer, or set_global_policy before building the model.");
  policy_ = policy;
}

Tensor Layer::operator()(const Tensor& input, bool training) { return call_with_mask(input, Tensor(), training); }

Tensor Layer::call_with_mask(const Tensor& input, const Tensor& mask, bool training) {
  if (body_) return body_->call_with_mask(input, mask, training);
  if (name_.empty()) name_ = to_snake_case(class_name());
  SourceScope scope(name_);
  const Tensor x = autocast_input(input, *this);
  trace::AutocastScope autocast_scope(autocast_dtype(*this));
  if (x.rank() == 0)
    KILN_THROW(ShapeError, "[", name_, "] expected a batched input (batch first), received ",
               x.shape(), ". Hint: batch the dataset (Dataset::batch).");
  if (!built_) build(Dims(x.dims().begin() + 1, x.dims().end()));
  if (!mask.defined()) return with_activity_loss(call(x, training));
  if (mask.dtype() != DType::kBool || mask.rank() != 2 || x.rank() < 2 || mask.dim(0) != x.dim(0) ||
      mask.dim(1) != x.dim(1))
    KILN_THROW(ShapeError, "[", name_, "] expected a bool (batch, time) mask matching the input ", x.shape(),
               ", received ", mask.shape(), ".");
  return with_activity_loss(call_masked(x, mask, training));
}

Tensor Layer::compute_mask(const Tensor& x, const Tensor& mask) const {
  if (!mask.defined() || supports_masking()) return mask;
  KILN_THROW(ValueError, "[", name(), "] ", class_name(), " does not support masking, but its input ", x.shape(),
             " carries a mask (from Embedding(mask_zero=true) or Masking). Hint: consume the mask first with a ",
             "recurrent layer (return_sequences=false), as Keras requires.");
}

Tensor Layer::operator()(const std::vector<Tensor>& inputs, bool training, const CallFlags& flags) {
  if (body_) return (*body_)(inputs, training, flags);
  if (name_.empty()) name_ = to_snake_case(class_name());
  SourceScope scope(name_);
  std::vector<Tensor> cast_inputs;
  for (const Tensor& x : inputs) cast_inputs.push_back(autocast_input(x, *this));
  trace::AutocastScope autocast_scope(autocast_dtype(*this));
  std::vector<Dims> shapes;
  for (const Tensor& x : inputs) {
    if (x.rank() == 0)
      KILN_THROW(ShapeError, "[", name_, "] expected batched inputs (batch first), received ", x.shape(),
                 ". Hint: batch the dataset (Dataset::batch).");
    shapes.emplace_back(x.dims().begin() + 1, x.dims().end());
  }
  if (!built_) build_multi(shapes);
  // A `training` call argument (Keras's layer(x, training=False), saved in a functional
  // config's node kwargs) pins the mode of this call, whatever the model runs in.
  if (auto pinned = flags.find("training"); pinned != flags.end()) {
    CallFlags rest = flags;
    rest.erase("training");
    return with_activity_loss(call_multi(cast_inputs, rest, pinned->second));
  }
  return with_activity_loss(call_multi(cast_inputs, flags, training));
}

Tensor Layer::with_activity_loss(const Tensor& output) {
  if (!activity_regularizer_ || output.rank() == 0) return output;
  // Divided by this call's batch (the replica's shard under a strategy), so the penalty's
  // strength does not depend on the batch size.
  const double batch = static_cast<double>(output.dims()[0]);
  if (batch > 0) activity_losses_.push_back((*activity_regularizer_)(output) / batch);
  return output;
}

void Layer::build(const Dims& input_shape) { build_multi(std::vector<Dims>{input_shape}); }

void Layer::build_multi(const std::vector<Dims>& input_shapes) {
  if (body_) return body_->build_multi(input_shapes);
  if (built_) return;
  if (name_.empty()) name_ = to_snake_case(class_name());
  build_weights_multi(input_shapes);
  built_input_shape_ = input_shapes.empty() ? Dims{} : input_shapes[0];
  built_input_shapes_ = input_shapes;
  built_ = true;
}

void Layer::build_weights_multi(const std::vector<Dims>& input_shapes) {
  if (input_shapes.size() != 1)
    KILN_THROW(ValueError, "[", name_, "] ", class_name(), " takes one input, received ", input_shapes.size(),
               ". Hint: combine inputs with Add() or Concatenate() first.");
  build_weights(input_shapes[0]);
}

Dims Layer::compute_output_shape_multi(const std::vector<Dims>& input_shapes) const {
  if (input_shapes.size() != 1)
    KILN_THROW(ValueError, "[", name_, "] ", class_name(), " takes one input, received ", input_shapes.size(),
               ". Hint: combine inputs with Add() or Concatenate() first.");
  return compute_output_shape(input_shapes[0]);
}

Tensor Layer::call_multi(const std::vector<Tensor>& inputs, const CallFlags& flags, bool training) {
  if (inputs.size() != 1)
    KILN_THROW(ValueError, "[", name_, "] ", class_name(), " takes one input, received ", inputs.size(),
               ". Hint: combine inputs with Add() or Concatenate() first.");
  if (!flags.empty())
    KILN_THROW(ValueError, "[", name_, "] ", class_name(), " takes no call flags, received '",
               flags.begin()->first, "'.");
  return call(inputs[0], training);
}

std::vector<Variable> Layer::trainable_weights() const {
  std::vector<Variable> out;
  if (!trainable()) return out;
  for (const Variable& w : weights())
    if (w.trainable()) out.push_back(w);
  return out;
}

std::vector<Variable> Layer::non_trainable_weights() const {
  std::vector<Variable> out;
  for (const Variable& w : weights())
    if (!trainable() || !w.trainable()) out.push_back(w);
  return out;
}

int64_t Layer::count_params() const {
  int64_t n = 0;
  for (const Variable& w : weights()) n += w.shape().num_elements();
  return n;
}

Variable Layer::add_weight(const std::string& name, const Dims& shape, const Initializer& initializer,
                           bool trainable) {
  return add_weight(name, shape, variable_dtype(), initializer, trainable);
}

Variable Layer::add_weight(const std::string& name, const Dims& shape, DType dtype, const Initializer& initializer,
                           bool trainable) {
  const std::string full = name_ + "/" + name;
  for (int64_t d : shape)
    if (d < 0)
      KILN_THROW(ShapeError, "[", name_, "] weight '", name, "' would have a size taken from an input dimension ",
                 "saved as None, which Keras cannot build either. "
                 "Hint: give that dimension a size in the model's input shape.");
  const Shape weight_shape(dtype, shape);  // ShapeError when the byte count overflows
  // The bytes are known before anything is allocated: a size no device holds (units of 2^40
  // from a config) is an error naming the layer, not an allocator failure.
  const std::shared_ptr<runtime::Backend> backend = trace::default_backend();
  if (const int64_t limit = backend->target_info().memory_limit_bytes(); weight_shape.byte_size() > limit)
    KILN_THROW(OutOfMemoryError, "[", name_, "] weight '", name, "' ", weight_shape, " needs ", weight_shape.byte_size(),
               " bytes, more than the ", backend->name(), " device's memory (", limit,
               " bytes). Hint: check the layer's sizes (units, filters) and its input shape.");
  weights_.emplace_back(full, initializer(weight_shape, full), trainable);
  return weights_.back();
}

Variable Layer::add_weight(const std::string& name, const Dims& shape, const Initializer& initializer, bool trainable,
                           const std::optional<Regularizer>& regularizer,
                           const std::optional<Constraint>& constraint) {
  Variable v = add_weight(name, shape, initializer, trainable);
  if (regularizer) regularizers_.emplace_back(v, *regularizer);
  if (constraint) constraints_.emplace_back(v, *constraint);
  return v;
}

void Layer::track_weights(const Layer& inner) {
  for (const Variable& v : inner.weights()) weights_.push_back(v);
}

std::vector<Tensor> Layer::regularization_losses() const {
  std::vector<Tensor> out;
  for (const auto& [w, r] : self().regularizers_) out.push_back(r(w.read()));
  return out;
}

void Layer::apply_constraints() const {
  for (const auto& [w, c] : self().constraints_) w.assign(c(w.read()));
}

std::string Layer::get_config() const { return internal::base_config(*this).dump(); }

namespace internal {

nlohmann::json base_config(const Layer& layer) {
  nlohmann::json j = {{"name", layer.name()}, {"trainable", layer.trainable()},
                      {"dtype", policy_json(layer.dtype_policy())}};
  if (!layer.declared_input_shape().empty()) {
    nlohmann::json shape = nlohmann::json::array({nullptr});
    for (int64_t d : layer.declared_input_shape()) shape.push_back(d == kNoneDim ? nlohmann::json() : nlohmann::json(d));
    j["batch_input_shape"] = shape;
  }
  return j;
}

nlohmann::json policy_json(const mixed_precision::Policy& policy) {
  if (!policy.is_mixed()) return policy.name();
  return {{"class_name", "Policy"}, {"config", {{"name", policy.name()}}}};
}

mixed_precision::Policy policy_from_json(const nlohmann::json& j, const std::string& layer) {
  const std::string at = layer.empty() ? "layer" : layer;
  if (j.is_null()) return mixed_precision::global_policy();
  std::string name;
  if (j.is_string()) {
    name = j.get<std::string>();
  } else {
    nlohmann::json config = nlohmann::json::object();
    const std::string cls = keras_object_class(j, "dtype policy", &config);
    if (cls != "Policy" && cls != "DTypePolicy" && cls != "FloatDTypePolicy")
      KILN_THROW(ConfigError, "[", at, "] dtype policy class '", cls, "' is not supported: Kiln reads Policy "
                 "(Keras 2), DTypePolicy and FloatDTypePolicy (Keras 3). Hint: quantized policies are not built.");
    if (!config.is_object() || !config.contains("name") || !config["name"].is_string())
      KILN_THROW(ConfigError, "[", at, "] dtype policy ", j.dump().substr(0, 200), " has no config name.");
    static constexpr ConfigKey kPolicyKeys[] = {{"name"}};  // Policy's and DTypePolicy's get_config
    expect_only_keys(config, {kPolicyKeys}, cls, at);
    name = config["name"].get<std::string>();
  }
  try {
    return mixed_precision::Policy(name);
  } catch (const ValueError& e) {
    KILN_THROW(ConfigError, "[", at, "] dtype: ", e.what());
  }
}

nlohmann::json initializer_json(const Initializer& init) {
  return {{"class_name", init.class_name()}, {"config", nlohmann::json::parse(init.config_json())}};
}

Initializer initializer_from_json(const nlohmann::json& j) {
  nlohmann::json config = nlohmann::json::object();
  const std::string class_name = keras_object_class(j, "initializer", &config);
  return Initializer::from_config(class_name, config.dump());
}

std::string keras_object_class(const nlohmann::json& j, const char* what, nlohmann::json* config) {
  if (j.is_string()) return j.get<std::string>();
  // {"class_name", "config"}, plus Keras 2.13+'s "module" and "registered_name" (which name
  // where Python finds the class; Kiln's table is by class name).
  if (!j.is_object() || !j.contains("class_name") || !j["class_name"].is_string())
    KILN_THROW(ConfigError, "[", what, "] expected a name or {\"class_name\": ..., \"config\": {...}}, received ",
               j.dump().substr(0, 200), ".");
  for (const auto& [key, v] : j.items())
    if (key != "class_name" && key != "config" && key != "module" && key != "registered_name" &&
        key != "shared_object_id")
      KILN_THROW(ConfigError, "[", what, "] unknown key '", key, "' in ", j.dump().substr(0, 200), ".");
  std::string cls = j["class_name"].get<std::string>();
  if (j.contains("config") && !j["config"].is_null()) *config = j["config"];
  return cls;
}

namespace {

// {"class_name", "config"} of a Regularizer or Constraint (null when absent), and back.
template <typename T>
nlohmann::json object_json(const std::optional<T>& o) {
  if (!o) return nullptr;
  return {{"class_name", o->class_name()}, {"config", nlohmann::json::parse(o->config_json())}};
}

template <typename T>
std::optional<T> object_from_json(const nlohmann::json& j, const char* what) {
  if (j.is_null()) return std::nullopt;
  nlohmann::json config = nlohmann::json::object();
  const std::string cls = keras_object_class(j, what, &config);
  return T::from_config(cls, config.dump());
}

}  // namespace

nlohmann::json regularizer_json(const std::optional<Regularizer>& r) { return object_json(r); }
std::optional<Regularizer> regularizer_from_json(const nlohmann::json& j) {
  return object_from_json<Regularizer>(j, "regularizers");
}
nlohmann::json constraint_json(const std::optional<Constraint>& c) { return object_json(c); }
std::optional<Constraint> constraint_from_json(const nlohmann::json& j) {
  return object_from_json<Constraint>(j, "constraints");
}

std::string activation_from_json(const nlohmann::json& j) {
  if (j.is_null()) return "";
  nlohmann::json config = nlohmann::json::object();
  std::string name = keras_object_class(j, "activations", &config);
  // Keras 2.13+ / 3 serialize a built-in activation function as {"module": "keras.activations",
  // "class_name": "function", "config": "relu", "registered_name": "relu"}.
  if (name == "function" && config.is_string()) name = config.get<std::string>();
  // Advanced-activation classes with their default arguments are the plain functions.
  if (name == "ReLU" || name == "Softmax" || name == "Sigmoid" || name == "Tanh" || name == "Linear")
    name = to_snake_case(name);
  if (name == "linear") name = "";
  activations::get(name);  // ConfigError naming an unknown activation
  return name;
}

Dims input_shape_from(const nlohmann::json& config) {
  Dims dims;
  if (!config.contains("batch_input_shape")) return dims;
  const auto& shape = config["batch_input_shape"];
  if (!shape.is_array())
    KILN_THROW(ConfigError, "[", config.value("name", "layer"), "] batch_input_shape must be a list, received ",
               shape.dump(), ".");
  for (size_t i = 1; i < shape.size(); ++i) {
    // None (a text's length, an image's size): Keras builds the weights without it and traces
    // once per concrete shape; Kiln does too (kNoneDim until a call gives the size).
    if (shape[i].is_null()) {
      dims.push_back(kNoneDim);
      continue;
    }
    if (!shape[i].is_number_integer() || shape[i].get<int64_t>() <= 0)
      KILN_THROW(ConfigError, "[", config.value("name", "layer"), "] batch_input_shape ", shape.dump(),
                 " must hold positive integers or null after the batch dimension.");
    dims.push_back(shape[i].get<int64_t>());
  }
  return dims;
}

int64_t int_field(const nlohmann::json& config, const char* key, const char* layer) {
  if (!config.contains(key) || !config[key].is_number_integer())
    KILN_THROW(ConfigError, "[", layer, "] config field '", key, "' must be an integer, received ",
               config.contains(key) ? config[key].dump() : std::string("nothing"), ".");
  return config[key].get<int64_t>();
}

nlohmann::json parse(const std::string& text, const char* where) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    KILN_THROW(ConfigError, "[", where, "] malformed config JSON: ", e.what(),
               ". Hint: pass the text get_config() produced.");
  }
}

}  // namespace internal
}  // namespace kiln::keras
