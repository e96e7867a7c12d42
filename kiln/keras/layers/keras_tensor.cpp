// KerasTensor, keras::Input and Layer's symbolic call operators: recording the layer graph
// that keras::Model(inputs, outputs) turns into a Functional model.
#include "kiln/keras/layers/keras_tensor.h"

#include "kiln/core/check.h"
#include "kiln/keras/layers/host_layer.h"
#include "kiln/keras/layers/input_layer.h"
#include "kiln/keras/layers/layer.h"

namespace kiln::keras {
namespace {

const internal::KerasNode& checked(const std::shared_ptr<internal::KerasNode>& node) {
  if (node == nullptr)
    KILN_THROW(ValueError, "[KerasTensor] an undefined KerasTensor was used. Hint: make inputs with keras::Input(shape).");
  return *node;
}

}  // namespace

const Dims& KerasTensor::shape() const { return checked(node_).shape; }
DType KerasTensor::dtype() const { return checked(node_).dtype; }
Layer& KerasTensor::layer() const { return *checked(node_).layer; }

KerasTensor Input(Dims shape, InputOptions options) {
  for (int64_t d : shape)
    if (d <= 0 && d != kNoneDim)  // None: any size, traced per concrete shape
      KILN_THROW(ShapeError, "[Input] expected positive per-example dims (or kNoneDim), received ", dims_to_string(shape),
                 ". Hint: give the shape without the batch dim.");
  auto layer = std::make_shared<InputLayer>(InputLayerOptions{.shape = shape, .name = options.name});
  auto node = std::make_shared<internal::KerasNode>();
  node->layer = std::move(layer);
  node->shape = std::move(shape);
  node->dtype = options.dtype;
  return KerasTensor(std::move(node));
}

namespace internal {

KerasTensor record_call(std::shared_ptr<Layer> layer, std::vector<KerasTensor> inputs, CallFlags flags) {
  const std::string where = layer->name().empty() ? layer->class_name() : layer->name();
  if (inputs.empty()) KILN_THROW(ValueError, "[", where, "] called on an empty list of inputs.");
  std::vector<Dims> shapes;
  for (const KerasTensor& x : inputs) {
    if (!x.defined())
      KILN_THROW(ValueError, "[", where, "] called on an undefined KerasTensor. Hint: make inputs with keras::Input(shape).");
    shapes.push_back(x.shape());
  }
  auto node = std::make_shared<KerasNode>();
  // The layer is named and built by the model that uses it (so names are unique per model);
  // here only its output shape is inferred.
  node->shape = layer->compute_output_shape_multi(shapes);
  if (const auto* host = dynamic_cast<const HostLayer*>(layer.get())) node->dtype = host->output_dtype();
  node->layer = std::move(layer);
  node->inputs = std::move(inputs);
  node->flags = std::move(flags);
  return KerasTensor(std::move(node));
}

}  // namespace internal

namespace {

// A layer object no shared_ptr owns joins the graph as a copy made from its config (the same
// route a loaded model takes), since its concrete type is unknown here; a host layer copies
// itself, keeping its adapted vocabulary and sharing its tables with the user's object.
std::shared_ptr<Layer> shared_copy(Layer& layer) {
  if (std::shared_ptr<Layer> self = layer.weak_from_this().lock()) return self;
  if (const auto* host = dynamic_cast<const HostLayer*>(&layer)) return host->shared_copy();
  if (layer.built())
    KILN_THROW(ValueError, "[", layer.name(), "] a built layer that no model holds yet cannot join a functional "
               "graph (its weights would be lost). Hint: hold it in a LayerHandle, or call it on KerasTensors "
               "before calling it on tensors.");
  try {
    return layer_from_config(layer.class_name(), layer.get_config()).shared();
  } catch (const ConfigError& e) {
    KILN_THROW(ValueError, "[", layer.class_name(), "] cannot make this layer object part of a functional graph: ",
               e.what(), " Hint: hold it in a LayerHandle: `auto l = std::make_shared<MyLayer>(...); (*l)(x);`.");
  }
}

}  // namespace

std::shared_ptr<Layer> Layer::shared_self() {
  if (body_) return body_;
  std::shared_ptr<Layer> shared = shared_copy(*this);
  if (shared.get() != this) body_ = shared;
  return shared;
}

KerasTensor Layer::operator()(const KerasTensor& x) & { return internal::record_call(shared_self(), {x}, {}); }
KerasTensor Layer::operator()(const KerasTensor& x) && {
  return internal::record_call(body_ ? body_ : shared_copy(*this), {x}, {});
}
KerasTensor Layer::operator()(const std::vector<KerasTensor>& inputs, const CallFlags& flags) & {
  return internal::record_call(shared_self(), inputs, flags);
}
KerasTensor Layer::operator()(const std::vector<KerasTensor>& inputs, const CallFlags& flags) && {
  return internal::record_call(body_ ? body_ : shared_copy(*this), inputs, flags);
}
KerasTensor Layer::operator()(const KerasTensor& x, const CallOptions& options) & {
  return internal::record_call(shared_self(), {x}, options.flags());
}
KerasTensor Layer::operator()(const KerasTensor& x, const CallOptions& options) && {
  return internal::record_call(body_ ? body_ : shared_copy(*this), {x}, options.flags());
}

}  // namespace kiln::keras
