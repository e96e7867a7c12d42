// ModelLayer: a nested model's weights, shapes, config and call, delegated to the model.
#include "kiln/keras/models/model_layer.h"

#include <map>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/keras/layers/input_layer.h"
#include "kiln/keras/models/functional.h"
#include "kiln/keras/models/sequential.h"

namespace kiln::keras {
namespace {

// A model's class as Keras names it in configs.
std::string model_class(const Model& model) {
  if (dynamic_cast<const Sequential*>(&model) != nullptr) return "Sequential";
  if (dynamic_cast<const Functional*>(&model) != nullptr) return "Functional";
  KILN_THROW(ValueError, "[", model.name(), "] only a Sequential or Functional model can be used as a layer.");
}

}  // namespace

Dims declared_model_input(const Model& model) {
  if (const auto* seq = dynamic_cast<const Sequential*>(&model)) return seq->input_shape();
  if (const auto* fn = dynamic_cast<const Functional*>(&model); fn != nullptr && fn->inputs().size() == 1)
    return fn->inputs()[0].shape();
  return {};
}

ModelLayer::ModelLayer(std::shared_ptr<Model> model)
    : Layer(model ? model->name() : "", model ? declared_model_input(*model) : Dims{}), model_(std::move(model)) {
  KILN_CHECK(model_ != nullptr, "ModelLayer needs a model");
  class_name_ = model_class(*model_);
  if (model_->num_inputs() != 1 || model_->num_outputs() != 1)
    KILN_THROW(ValueError, "[", model_->name(), "] a model used as a layer must take one input and give one output; "
               "it has ", model_->num_inputs(), " inputs and ", model_->num_outputs(), " outputs.");
}

Dims ModelLayer::compute_output_shape(const Dims& input_shape) const {
  const Model& m = model();
  if (const auto* fn = dynamic_cast<const Functional*>(&m)) return fn->output().shape();
  Dims dims = input_shape;
  for (const LayerHandle& l : m.layers()) dims = l->compute_output_shape(dims);
  return dims;
}

std::string ModelLayer::get_config() const {
  nlohmann::json config = nlohmann::json::parse(model().to_json())["config"];
  if (!model().trainable()) config["trainable"] = false;
  return config.dump();
}

std::vector<Variable> ModelLayer::random_state() const {
  std::vector<Variable> out;
  for (const LayerHandle& l : model().layers())
    for (const Variable& v : l->random_state()) out.push_back(v);
  return out;
}

// The model's flag is the one that counts (the model may be frozen through either handle);
// the layer's own mirrors it for code that reads Layer::trainable().
void ModelLayer::set_trainable(bool trainable) {
  Layer::set_trainable(trainable);
  self_as<ModelLayer>().model_->set_trainable(trainable);
}

std::vector<Variable> ModelLayer::trainable_weights() const {
  std::vector<Variable> out;
  if (!model().trainable()) return out;  // Keras: a frozen model's weights are all non-trainable
  for (const LayerHandle& l : model().layers())
    for (const Variable& v : l->trainable_weights()) out.push_back(v);
  return out;
}

std::vector<Variable> ModelLayer::non_trainable_weights() const {
  if (!model().trainable()) return weights();
  std::vector<Variable> out;
  for (const LayerHandle& l : model().layers())
    for (const Variable& v : l->non_trainable_weights()) out.push_back(v);
  return out;
}

std::vector<std::pair<std::string, Variable>> ModelLayer::weight_paths() const {
  std::map<const trace::VariableState*, std::string> paths;  // by identity: names may repeat across models
  for (const LayerHandle& l : model().layers()) {
    if (const auto* inner = dynamic_cast<const ModelLayer*>(l.get())) {
      for (const auto& [path, v] : inner->weight_paths()) paths[v.state().get()] = inner->name() + "/" + path;
    } else {
      for (const Variable& v : l->weights()) paths[v.state().get()] = v.name();
    }
  }
  std::vector<std::pair<std::string, Variable>> out;
  std::vector<Variable> saved = trainable_weights();
  for (const Variable& v : non_trainable_weights()) saved.push_back(v);
  for (const Variable& v : saved) out.emplace_back(paths.at(v.state().get()), v);
  return out;
}

void ModelLayer::build_weights(const Dims& input_shape) {
  if (auto* seq = dynamic_cast<Sequential*>(model_.get()); seq != nullptr && !seq->built()) seq->build(input_shape);
  for (const LayerHandle& l : model_->layers()) track_weights(*l);
}

Tensor ModelLayer::call(const Tensor& x, bool training) { return model_->call(x, training); }

KerasTensor Model::operator()(const KerasTensor& x, const CallOptions& options) {
  std::shared_ptr<Model> shared = weak_from_this().lock();
  if (!shared)
    KILN_THROW(ValueError, "model '", name(), "' is called on a KerasTensor but is not held by a std::shared_ptr",
               ". Hint: auto base = std::make_shared<Functional>(...); then (*base)(inputs), so that the outer",
               " model shares its layers");
  auto layer = std::make_shared<ModelLayer>(std::move(shared));
  return (*layer)(x, options);
}

}  // namespace kiln::keras
