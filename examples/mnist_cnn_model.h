// The Keras MNIST convnet (keras.io "Simple MNIST convnet", peer workload W2) on the Keras
// API, compiled with Adam and sparse categorical crossentropy from logits. Shared by
// examples/mnist_cnn and the end-to-end test of issue 8's accuracy bar.
#pragma once

#include <memory>

#include "kiln/keras/keras.h"

namespace kiln::examples {

/// keras.Input((28, 28, 1)) -> Conv2D 32 3x3 relu -> MaxPooling2D 2 -> Conv2D 64 3x3 relu ->
/// MaxPooling2D 2 -> Flatten -> Dropout 0.5 -> Dense 10 (logits); 34,826 parameters. Adam's
/// learning rate defaults to Keras's 1e-3.
inline std::unique_ptr<keras::Sequential> make_mnist_cnn(double learning_rate = 1e-3) {
  using namespace kiln::keras;
  auto model = std::make_unique<Sequential>(std::vector<LayerHandle>{
      InputLayer({.shape = {28, 28, 1}}),
      Conv2D(32, {3, 3}, {.activation = "relu"}),
      MaxPooling2D({.pool_size = {2, 2}}),
      Conv2D(64, {3, 3}, {.activation = "relu"}),
      MaxPooling2D({.pool_size = {2, 2}}),
      Flatten(),
      Dropout(0.5),
      Dense(10),
  });
  model->compile({.optimizer = Adam({.learning_rate = learning_rate}),
                  .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}});
  return model;
}

}  // namespace kiln::examples
