// The Keras MNIST convnet (keras.io "Simple MNIST convnet", peer workload W2) on the Keras
// API, compiled with Adam and sparse categorical crossentropy from logits. Shared by
// examples/mnist_cnn, examples/mnist_cnn_select and the end-to-end tests of issue 8.
#pragma once

#include <memory>
#include <optional>

#include "kiln/keras/keras.h"

namespace kiln::examples {

/// The recipe examples/mnist_cnn_select chose on a validation split: batch 64, and Adam's
/// learning rate following CosineDecay(5e-3) to 0 over all `total_steps`.
inline constexpr int64_t kMnistCnnBatch = 64;
inline keras::LearningRate mnist_cnn_learning_rate(int64_t total_steps) {
  return keras::LearningRate(keras::CosineDecay(5e-3, total_steps));
}

struct MnistCnnOptions {
  /// Adam's learning rate, a constant or a schedule; Keras's default is 1e-3.
  keras::LearningRate learning_rate = 1e-3;
  /// Seeds the initializers and the dropout mask; unset, they derive from the weight and layer
  /// names (the same model every run).
  std::optional<uint64_t> seed = std::nullopt;
};

/// keras.Input((28, 28, 1)) -> Conv2D 32 3x3 relu -> MaxPooling2D 2 -> Conv2D 64 3x3 relu ->
/// MaxPooling2D 2 -> Flatten -> Dropout 0.5 -> Dense 10 (logits); 34,826 parameters.
inline std::unique_ptr<keras::Sequential> make_mnist_cnn(MnistCnnOptions o = {}) {
  using namespace kiln::keras;
  auto kernel_init = [&](uint64_t k) { return o.seed ? Initializer("glorot_uniform", *o.seed * 4 + k) : Initializer("glorot_uniform"); };
  auto model = std::make_unique<Sequential>(std::vector<LayerHandle>{
      InputLayer({.shape = {28, 28, 1}}),
      Conv2D(32, {3, 3}, {.activation = "relu", .kernel_initializer = kernel_init(0)}),
      MaxPooling2D({.pool_size = {2, 2}}),
      Conv2D(64, {3, 3}, {.activation = "relu", .kernel_initializer = kernel_init(1)}),
      MaxPooling2D({.pool_size = {2, 2}}),
      Flatten(),
      Dropout(0.5, {.seed = o.seed}),
      Dense(10, {.kernel_initializer = kernel_init(2)}),
  });
  model->compile({.optimizer = Adam({.learning_rate = o.learning_rate}),
                  .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}});
  return model;
}

}  // namespace kiln::examples
