// The seed's custom training loop (S15): the same MLP trained with an explicit GradientTape
// step compiled by kiln::function (tf.function), with metrics updated inside the step.
// TODO(#6): strategy.run / strategy.reduce(SUM) / experimental_distribute_dataset once the
// distribution issue lands; today the loop runs on the default CPU strategy (one replica).
//
//   build/examples/mnist_custom_loop [epochs]
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "kiln/core/error.h"
#include "kiln/data/dataset.h"
#include "kiln/data/datasets/mnist.h"
#include "kiln/keras/keras.h"
#include "examples/mnist_pipeline.h"
#include "kiln/trace/function.h"
#include "kiln/trace/gradient_tape.h"

using namespace kiln;
using namespace kiln::keras;

int main(int argc, char** argv) try {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 5;
  constexpr int64_t kBatch = 128;

  Sequential model({Flatten({.input_shape = {28, 28}}), Dense(128, {.activation = "relu"}), Dense(10)});
  SparseCategoricalCrossentropy loss_fn({.from_logits = true});
  Adam optimizer;
  Mean train_loss("train_loss");
  SparseCategoricalAccuracy train_accuracy("train_accuracy"), test_accuracy("test_accuracy");

  // @tf.function def train_step(x, y): forward, loss, tape.gradient, apply_gradients, metrics.
  Function train_step = kiln::function("train_step", [&](const std::vector<Tensor>& in) {
    GradientTape tape;
    Tensor logits = model(in[0], /*training=*/true);
    Tensor loss = loss_fn(in[1], logits);
    std::vector<Variable> vars = model.trainable_weights();
    optimizer.apply_gradients(tape.gradient(loss, vars), vars);
    train_loss.update(loss);
    train_accuracy.update_state(in[1], logits);
    return std::vector<Tensor>{loss};
  });
  Function test_step = kiln::function("test_step", [&](const std::vector<Tensor>& in) {
    test_accuracy.update_state(in[1], model(in[0], /*training=*/false));
    return std::vector<Tensor>{test_accuracy.result()};
  });

  auto [train, test] = datasets::mnist::load_data();
  // One pass per epoch (no repeat): the loop ends when the iterator does.
  data::Dataset train_ds = examples::mnist_pipeline(train, {.batch_size = kBatch, .repeat = false});
  data::Dataset test_ds = examples::mnist_pipeline(test, {.batch_size = kBatch, .shuffle = false, .repeat = false});

  for (int epoch = 0; epoch < epochs; ++epoch) {
    train_loss.reset_state();
    train_accuracy.reset_state();
    test_accuracy.reset_state();
    data::Iterator it = train_ds.iterator(static_cast<uint64_t>(epoch));
    while (auto batch = it.next()) train_step({(*batch)[0], (*batch)[1]});
    double test_acc = 0;
    data::Iterator test_it = test_ds.iterator();
    while (auto batch = test_it.next()) test_acc = test_step({(*batch)[0], (*batch)[1]})[0].to_vector<double>()[0];
    std::printf("Epoch %d: loss %.4f, accuracy %.4f, test accuracy %.4f\n", epoch + 1,
                train_loss.result().to_vector<double>()[0], train_accuracy.result().to_vector<double>()[0],
                test_acc);
  }
  return 0;
} catch (const kiln::Error& e) {
  std::cerr << "mnist_custom_loop: " << e.kind() << ": " << e.what() << "\n";
  return 1;
}
