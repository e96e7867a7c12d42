// Sequential: layer naming, eager build from a declared input shape, config JSON.
#include "kiln/keras/models/sequential.h"

#include <algorithm>

#include "kiln/core/check.h"
#include "kiln/core/logging.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/layers/input_layer.h"

namespace kiln::keras {

Sequential::Sequential(std::vector<LayerHandle> layers, SequentialOptions options) : Model(options.name) {
  for (LayerHandle& l : layers) add(std::move(l));
}

void Sequential::add(LayerHandle layer) {
  Layer& l = *layer;
  if (!l.name().empty())
    for (const LayerHandle& other : layers_)
      if (other->name() == l.name())
        KILN_THROW(ValueError, "[", name_, "] all layers added to a Sequential model should have unique names. Name '",
                   l.name(), "' is already the name of a layer in this model (Keras's rule).");
  if (l.name().empty()) l.set_name(name_scope_.unique(to_snake_case(l.class_name())));
  else name_scope_.reserve(l.name());
  const bool first = layers_.empty() && input_shape_.empty();
  if (dynamic_cast<InputLayer*>(&l) != nullptr) {
    if (!first)
      KILN_THROW(ValueError, "[", name_, "] an InputLayer must come first. Hint: add it before the other layers.");
    input_shape_ = l.declared_input_shape();
    return;
  }
  layers_.push_back(std::move(layer));
  if (first && !l.declared_input_shape().empty()) {
    build(l.declared_input_shape());
  } else if (built()) {  // extend the built stack
    Dims dims = input_shape_;
    for (size_t i = 0; i + 1 < layers_.size(); ++i) dims = layers_[i]->compute_output_shape(dims);
    l.build(dims);
  }
}

void Sequential::build(const Dims& input_shape) {
  input_shape_ = input_shape;
  Dims dims = input_shape;
  for (LayerHandle& l : layers_) {
    l->build(dims);
    dims = l->compute_output_shape(dims);
  }
}

namespace {

// "(None, 28, 28)": Keras's way of printing a per-example shape with its batch.
std::string batch_dims_text(const Dims& dims) {
  std::string s = "(None";
  for (int64_t d : dims) s += ", " + (d == kNoneDim ? std::string("None") : std::to_string(d));
  return s + ")";
}

}  // namespace

std::vector<const HostLayer*> Sequential::leading_host_layers() const {
  std::vector<const HostLayer*> out;
  for (const LayerHandle& l : layers_) {
    const auto* host = dynamic_cast<const HostLayer*>(&*l);
    if (host == nullptr) break;
    out.push_back(host);
  }
  return out;
}

Tensor Sequential::call(const Tensor& x, bool training) {
  if (layers_.empty())
    KILN_THROW(ValueError, "[", name_, "] the model has no layers. Hint: model.add(Dense(10)).");
  const Dims example(x.dims().begin() + 1, x.dims().end());
  if (!built()) input_shape_ = example;
  // A traced call starts after the host layers, which fit, evaluate and predict ran already.
  const size_t first = x.is_symbolic() ? leading_host_layers().size() : 0;
  Dims expected = input_shape_;
  for (size_t i = 0; i < first; ++i) expected = layers_[i]->compute_output_shape(expected);
  const bool fits = example.size() == expected.size() &&
                    std::equal(example.begin(), example.end(), expected.begin(),
                               [](int64_t got, int64_t want) { return want == kNoneDim || want == got; });
  if (!fits && !warned_input_shape_) {
    // Keras warns and runs the layers on what it is given (the seed's Flatten((28, 28)) gets
    // (28, 28, 1) images); the layers still check what they can take.
    warned_input_shape_ = true;
    log(LogLevel::kWarning, str_cat("Model '", name_, "' was constructed with shape ", batch_dims_text(input_shape_),
                                    " for its input, but it was called on an input with incompatible shape ",
                                    batch_dims_text(example), "."));
  }
  // Keras's mask propagation: Embedding(mask_zero) and Masking start a mask, each layer's
  // compute_mask passes it on, and a recurrent layer reads it (and drops it unless it
  // returns sequences).
  Tensor h = x, mask;
  for (size_t i = first; i < layers_.size(); ++i) {
    Layer* l = &*layers_[i];
    Tensor next = l->call_with_mask(h, mask, training);
    mask = l->compute_mask(h, mask);
    h = next;
  }
  output_masks_ = {mask};
  return h;
}

std::vector<Dims> Sequential::layer_output_shapes() const {
  std::vector<Dims> out;
  if (!built()) return out;
  Dims dims = input_shape_;
  for (const LayerHandle& l : layers_) {
    dims = l->compute_output_shape(dims);
    out.push_back(dims);
  }
  return out;
}

std::string Sequential::to_json() const {
  nlohmann::json layers = nlohmann::json::array();
  for (size_t i = 0; i < layers_.size(); ++i) {
    nlohmann::json config = nlohmann::json::parse(layers_[i]->get_config());
    if (i == 0 && !input_shape_.empty()) {  // Keras 2 records the input on the first layer
      nlohmann::json shape = nlohmann::json::array({nullptr});
      for (int64_t d : input_shape_) shape.push_back(d == kNoneDim ? nlohmann::json() : nlohmann::json(d));
      config["batch_input_shape"] = shape;
    }
    layers.push_back({{"class_name", layers_[i]->class_name()}, {"config", config}});
  }
  nlohmann::json j = {{"class_name", "Sequential"}, {"config", {{"name", name_}, {"layers", layers}}}};
  return j.dump();
}

std::unique_ptr<Sequential> Sequential::from_json(const std::string& json, const LayerFromConfig& make_layer) {
  nlohmann::json j = internal::parse(json, "Sequential.from_json");
  if (j.value("class_name", "") != "Sequential")
    KILN_THROW(ConfigError, "[Sequential.from_json] expected class_name \"Sequential\", received ",
               j.value("class_name", "(none)"), ".");
  const nlohmann::json& config = j.contains("config") ? j["config"] : nlohmann::json();
  if (!config.is_object() || !config.contains("layers") || !config["layers"].is_array())
    KILN_THROW(ConfigError, "[Sequential.from_json] expected \"config\": {\"name\": ..., \"layers\": [...]}, received ",
               config.dump().substr(0, 200), ". Hint: keras::models::model_from_json also reads Keras <= 2.2.2's "
               "bare list of layers.");
  auto model = std::make_unique<Sequential>(std::vector<LayerHandle>{},
                                            SequentialOptions{.name = config.value("name", "sequential")});
  for (const nlohmann::json& l : config["layers"]) {
    if (!l.is_object() || !l.contains("class_name") || !l["class_name"].is_string() || !l.contains("config"))
      KILN_THROW(ConfigError, "[Sequential.from_json] expected each layer as {\"class_name\": ..., \"config\": {...}}, "
                 "received ", l.dump().substr(0, 200), ".");
    model->add((make_layer ? make_layer : layer_from_config)(l["class_name"].get<std::string>(), l["config"].dump()));
  }
  return model;
}

}  // namespace kiln::keras
