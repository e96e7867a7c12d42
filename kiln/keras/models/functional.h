// Functional: a model made of the layer graph between keras::Input tensors and its outputs
// (keras.Model(inputs, outputs)), for residual, multi-input and multi-output models.
//   KerasTensor x = Input({16});
//   KerasTensor y = Add()({x, Dense(16, {.activation = "relu"})(x)});
//   Functional model({x}, Dense(1)(y));
//   Functional two_heads({x}, {Dense(3, {.name = "cls"})(y), Dense(1, {.name = "reg"})(y)});
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/keras/layers/keras_tensor.h"
#include "kiln/keras/models/model.h"

namespace kiln::keras {

struct FunctionalOptions {
  std::string name = "model";
};

class Functional : public Model {
 public:
  /// Collects the layers between `inputs` (keras::Input tensors) and `output` in Keras's order
  /// (by depth from the inputs), names unnamed ones uniquely within the model (input_1, dense,
  /// dense_1, ...) and builds them. ValueError when `output` needs an input not in `inputs`.
  Functional(std::vector<KerasTensor> inputs, KerasTensor output, FunctionalOptions options = {});
  /// A model with several outputs (Keras's keras.Model(inputs, [out_1, out_2])): compile takes
  /// a loss per output, fit one y per output, and call_outputs/predict_outputs return one
  /// tensor per output, in this order. Each output is named after the layer that makes it.
  Functional(std::vector<KerasTensor> inputs, std::vector<KerasTensor> outputs, FunctionalOptions options = {});
  /// A model whose outputs are a dict (Keras's keras.Model(inputs, {"a": out_a, "b": out_b})),
  /// given as {{"a", out_a}, {"b", out_b}} (pairs, not a std::map, whose iterator-pair
  /// constructor would make a braced {out_1, out_2} ambiguous): the outputs are in the order
  /// of their keys (as Keras flattens a dict) and named by them, so losses, metrics, y and
  /// sample weights go by key, and predict_by_name returns them by key. Saved as Keras writes
  /// it: output_layers a dict of [layer, node, tensor] references.
  Functional(std::vector<KerasTensor> inputs, std::vector<std::pair<std::string, KerasTensor>> outputs,
             FunctionalOptions options = {});

  Tensor call(const Tensor& x, bool training) override;
  /// The forward pass on one tensor per input, in the order of `inputs` (single-output models).
  Tensor call_multi(const std::vector<Tensor>& inputs, bool training) override;
  /// The forward pass returning one tensor per output.
  std::vector<Tensor> call_outputs(const std::vector<Tensor>& inputs, bool training) override;
  size_t num_inputs() const override { return inputs_.size(); }
  /// For each input, the host layers it runs through before any compiled layer: the chain of
  /// StringLookup, IntegerLookup and TextVectorization calls starting at that Input, each read
  /// only by the next. A traced call takes the last one's output in place of the input.
  std::vector<std::vector<const HostLayer*>> host_layers() const override;
  std::vector<std::string> output_names() const override;

  /// Keras 2 {"class_name": "Functional", "config": {"name", "layers" (each with "name" and
  /// "inbound_nodes"), "input_layers", "output_layers"}}.
  std::string to_json() const override;
  /// A new, built model from to_json() (or a tf.keras 2.x Functional/Model config).
  /// `make_layer` builds each layer (layer_from_config when null).
  static std::unique_ptr<Functional> from_json(const std::string& json, const LayerFromConfig& make_layer = nullptr);

  const std::vector<KerasTensor>& inputs() const { return inputs_; }
  /// The output of a single-output model; ValueError naming outputs() for several.
  const KerasTensor& output() const;
  const std::vector<KerasTensor>& outputs() const { return outputs_; }
  /// The keys of a model built on a dict of outputs, in output order; empty otherwise.
  const std::vector<std::string>& output_keys() const { return output_keys_; }

 protected:
  std::vector<Dims> layer_output_shapes() const override;
  std::vector<SummaryRow> summary_rows() const override;
  bool summary_shows_connections() const override { return !sequential_like_; }

 private:
  /// The nodes of host_layers(), per input; CompileError when an input or a host layer's output
  /// feeds a host layer and also a compiled layer, a second host layer or a model output.
  std::vector<std::vector<std::shared_ptr<internal::KerasNode>>> host_chains() const;
  /// "[name, node_index, 0]" reference parts for a tensor of this model.
  std::pair<std::string, int> node_ref(const KerasTensor& t) const;

  std::vector<KerasTensor> inputs_;
  std::vector<KerasTensor> outputs_;
  std::vector<std::string> output_keys_;
  /// Every node between inputs and outputs, inputs first, each after its inputs.
  std::vector<std::shared_ptr<internal::KerasNode>> nodes_;
  /// A node's index among its layer's nodes in this model (Keras's node_index).
  std::map<const internal::KerasNode*, int> node_index_;
  bool sequential_like_ = true;
};

}  // namespace kiln::keras
