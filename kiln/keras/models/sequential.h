// Sequential: a plain stack of layers, each feeding the next (keras.Sequential).
//   Sequential model({Flatten({.input_shape = {28, 28}}), Dense(128, {.activation = "relu"}), Dense(10)});
#pragma once

#include <memory>

#include "kiln/keras/models/model.h"

namespace kiln::keras {

struct SequentialOptions {
  std::string name = "sequential";
};

class Sequential : public Model {
 public:
  explicit Sequential(std::vector<LayerHandle> layers = {}, SequentialOptions options = {});
  /// Appends a layer, naming it uniquely within the model (dense, dense_1, ...) unless it has
  /// a name. An InputLayer only declares the input shape.
  void add(LayerHandle layer);
  /// The leading layers that run on the host (Model::host_layers): a traced call starts after them.
  std::vector<std::vector<const HostLayer*>> host_layers() const override { return {leading_host_layers()}; }
  /// Builds every layer for per-example input dims (batch excluded).
  void build(const Dims& input_shape);
  bool built() const { return !input_shape_.empty(); }
  /// The per-example input dims it was built for (-1 where Keras saved None); empty until built.
  const Dims& input_shape() const { return input_shape_; }

  Tensor call(const Tensor& x, bool training) override;
  /// {"class_name": "Sequential", "config": {"name": ..., "layers": [...]}}
  std::string to_json() const override;
  /// A new, unbuilt-or-built (when the config declares the input shape) model from to_json();
  /// `make_layer` builds each layer (layer_from_config when null).
  static std::unique_ptr<Sequential> from_json(const std::string& json, const LayerFromConfig& make_layer = nullptr);

 protected:
  std::vector<Dims> layer_output_shapes() const override;

 private:
  std::vector<const HostLayer*> leading_host_layers() const;

  Dims input_shape_;
  bool warned_input_shape_ = false;  // Keras's "constructed with shape ... called on ..." once
};

}  // namespace kiln::keras
