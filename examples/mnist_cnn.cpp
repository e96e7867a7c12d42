// The Keras MNIST convnet in Kiln (keras.io "Simple MNIST convnet"; the seed's "bigger models",
// S28): Conv2D 32 3x3 relu -> MaxPooling2D 2 -> Conv2D 64 3x3 relu -> MaxPooling2D 2 ->
// Flatten -> Dropout 0.5 -> Dense 10, sparse categorical crossentropy from logits. Fits 2
// epochs with validation on the test split, then evaluates on all 10,000 test images; issue
// 8's bar is 98.8% after 2 epochs.
//
// The training recipe, batch 64 and Adam with CosineDecay(5e-3) over all the steps, was chosen
// on a validation split of the training set by examples/mnist_cnn_select (never on the test
// set). Measured here: 98.83%, 98.89% and 98.91% test accuracy for three seeds. Keras's example
// defaults (batch 128, constant 1e-3) give 98.10% after 2 epochs: `mnist_cnn 2 1e-3 128`.
//
//   build/examples/mnist_cnn [epochs=2] [learning_rate: constant; default the cosine recipe]
//                            [batch_size=64]
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "kiln/core/error.h"
#include "kiln/data/dataset.h"
#include "kiln/data/datasets/mnist.h"
#include "kiln/keras/keras.h"
#include "examples/mnist_cnn_model.h"
#include "examples/mnist_pipeline.h"

using namespace kiln;
using namespace kiln::keras;

int main(int argc, char** argv) try {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 2;
  const int64_t batch_size = argc > 3 ? std::atoi(argv[3]) : examples::kMnistCnnBatch;
  const LearningRate learning_rate =
      argc > 2 ? LearningRate(std::atof(argv[2])) : examples::mnist_cnn_learning_rate(epochs * (60000 / batch_size));
  constexpr double kBar = 0.988;

  // 1. The model (examples/mnist_cnn_model.h): keras.Input(shape=(28, 28, 1)) then the
  // convnet, compiled with Adam and sparse categorical crossentropy from logits. summary()
  // prints the Keras table (34,826 parameters).
  std::unique_ptr<Sequential> model = examples::make_mnist_cnn({.learning_rate = learning_rate});
  model->summary();

  // 2. The seed's pipeline with the channel dim added in map (np.expand_dims(x, -1) in Keras).
  auto [train, test] = datasets::mnist::load_data();
  data::Dataset train_ds = examples::mnist_pipeline(train, {.batch_size = batch_size, .channel_dim = true});
  data::Dataset test_ds =
      examples::mnist_pipeline(test, {.batch_size = batch_size, .shuffle = false, .channel_dim = true});

  // 3. Train: one compiled step (forward, loss, backward, Adam) per batch.
  model->fit(train_ds, {.epochs = epochs,
                        .steps_per_epoch = 60000 / batch_size,
                        .validation_data = test_ds,
                        .validation_steps = 10000 / batch_size});

  // 4. Evaluate on all 10,000 test images (batches of 100 cover them exactly).
  data::Dataset full_test =
      examples::mnist_pipeline(test, {.batch_size = 100, .shuffle = false, .repeat = false, .channel_dim = true});
  Logs result = model->evaluate(full_test, {.verbose = 0});
  std::printf("Test loss %.4f, test accuracy %.4f (issue 8's bar: %.3f after 2 epochs)\n", result.at("loss"),
              result.at("accuracy"), kBar);
  return 0;
} catch (const kiln::Error& e) {
  std::cerr << "mnist_cnn: " << e.kind() << ": " << e.what() << "\n";
  return 1;
}
