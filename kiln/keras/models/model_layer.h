// ModelLayer: a Sequential or Functional model used as a layer of another model, as Keras
// nests them (Teachable Machine and transfer-learning scripts save a keras.applications base
// inside a Sequential inside a Sequential). Loaders make one for each nested model entry.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/keras/layers/layer.h"
#include "kiln/keras/models/model.h"

namespace kiln::keras {

/// Runs `model` as one layer: its weights are the inner layers' (nested models included), in
/// their order, so trainable_weights() lists every inner trainable weight before any
/// non-trainable one, as Keras's Model.trainable_weights does. set_trainable sets the model's and
/// so every inner layer's flag (Keras's base_model.trainable = False): a frozen base's
/// BatchNormalization layers then normalize as in inference, even inside fit. The layer's name
/// is the model's.
///   auto base = std::make_shared<Sequential>(...);
///   Sequential top({ModelLayer(base), Dense(3)});
class ModelLayer : public Layer {
 public:
  /// `model` must take one input and give one output (what a layer call passes on).
  explicit ModelLayer(std::shared_ptr<Model> model);

  /// The model's class: "Sequential", "Functional".
  std::string class_name() const override { return class_name_; }
  Dims compute_output_shape(const Dims& input_shape) const override;
  /// The inner model's config object ({"name", "layers", ...}), "trainable": false when frozen.
  std::string get_config() const override;
  std::vector<Variable> random_state() const override;
  void set_trainable(bool trainable) override;
  /// Every inner layer's trainable weights (none when this layer is frozen); and the rest.
  std::vector<Variable> trainable_weights() const override;
  std::vector<Variable> non_trainable_weights() const override;

  const Model& model() const { return *self_as<ModelLayer>().model_; }

  /// Each weight (saved order: trainable first, as saved_weights) with its path inside this
  /// layer: the nested models' names, then the variable's name ("model1/Conv1/kernel").
  std::vector<std::pair<std::string, Variable>> weight_paths() const;

 protected:
  void build_weights(const Dims& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::shared_ptr<Model> model_;
  std::string class_name_;
};

/// The input dims a model declares (a built Sequential's, a Functional's single input), with
/// -1 for a dimension Keras saved as None; empty when unknown.
Dims declared_model_input(const Model& model);

}  // namespace kiln::keras
