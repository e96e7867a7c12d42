// KerasTensor: a symbolic value of the functional API (keras.Input(...) and what layers return
// when called on one). It is a node of a layer graph, not a trace Tensor: it records which layer
// made it from which inputs, and its per-example shape and dtype. keras::Model(inputs, outputs)
// walks these nodes to build a Functional model.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/core/shape.h"

namespace kiln::keras {

class Layer;
class KerasTensor;

/// Non-tensor call arguments recorded with a layer call (Keras call kwargs such as
/// MultiHeadAttention's use_causal_mask).
using CallFlags = std::map<std::string, bool>;

/// Keras's call arguments of a layer or model call on symbolic inputs: `training` pins the
/// call's mode whatever the outer model runs in (`base(x, training=False)` keeps a base's
/// BatchNormalization in inference mode during fit); none follows the outer model.
struct CallOptions {
  std::optional<bool> training;
  /// The recorded form (the "training" flag of a functional config's node kwargs).
  CallFlags flags() const { return training ? CallFlags{{"training", *training}} : CallFlags{}; }
};

namespace internal {
/// One layer call in the graph (Keras's Node): the layer, the tensors it was called on, its
/// flags, and the per-example shape and dtype of its output.
struct KerasNode {
  std::shared_ptr<Layer> layer;
  std::vector<KerasTensor> inputs;
  CallFlags flags;
  Dims shape;
  DType dtype = DType::kF32;
};
}  // namespace internal

class KerasTensor {
 public:
  KerasTensor() = default;
  explicit KerasTensor(std::shared_ptr<internal::KerasNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  /// Per-example dims (the batch dim excluded, as Keras prints it with None first).
  const Dims& shape() const;
  DType dtype() const;
  /// The layer that produced this tensor (an InputLayer for keras::Input).
  Layer& layer() const;
  const std::shared_ptr<internal::KerasNode>& node() const { return node_; }

 private:
  std::shared_ptr<internal::KerasNode> node_;
};

struct InputOptions {
  std::string name = "";
  DType dtype = DType::kF32;
};

/// keras.Input(shape): a symbolic model input of per-example `shape` (batch excluded).
///   KerasTensor x = Input({784});  KerasTensor tokens = Input({64}, {.dtype = DType::kI32});
KerasTensor Input(Dims shape, InputOptions options = {});

namespace internal {
/// Records `layer` called on `inputs` with `flags` and returns the new node's tensor, shaped by
/// the layer's compute_output_shape. The model that uses the node names and builds the layer.
KerasTensor record_call(std::shared_ptr<Layer> layer, std::vector<KerasTensor> inputs, CallFlags flags);
}  // namespace internal

}  // namespace kiln::keras
