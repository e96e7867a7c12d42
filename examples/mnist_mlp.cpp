// The seed's program in Kiln, step by step: find the devices and pick a strategy, build the
// seed MLP, compile it with Adam and sparse categorical crossentropy, build the input
// pipeline with the global batch, fit 5 epochs with validation, evaluate, save the model,
// load it back and evaluate again.
//
//   build/examples/mnist_mlp [epochs]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "kiln/core/error.h"
#include "kiln/data/dataset.h"
#include "kiln/data/datasets/mnist.h"
#include "kiln/distribute/cluster_resolver.h"
#include "kiln/distribute/mpi/mpi_world.h"
#include "kiln/keras/keras.h"
#include "examples/mnist_pipeline.h"

using namespace kiln;
using namespace kiln::keras;

namespace {

// The seed's model (S6), built the same way for training and for reloading the weights.
std::unique_ptr<Sequential> make_model() {
  return std::make_unique<Sequential>(std::vector<LayerHandle>{
      Flatten({.input_shape = {28, 28}}),
      Dense(128, {.activation = "relu"}),
      Dense(10),
  });
}

}  // namespace

int main(int argc, char** argv) try {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 5;

  // 1. Devices and strategy (S1-S4): an MPI world (mpirun -np N) gives
  // MultiWorkerMirroredStrategy, KILN_CPU_DEVICES=n a MirroredStrategy over n logical CPU
  // devices, otherwise the default CPU strategy. Everything below is made in its scope (S5).
  std::shared_ptr<distribute::Strategy> strategy = distribute::auto_detect();
  const int64_t replicas = strategy->num_replicas_in_sync();
  if (strategy->is_chief()) std::cout << "REPLICAS: " << replicas << "\n";
  auto scope = strategy->scope();

  // 2. The model and its optimizer (S5, S6).
  std::unique_ptr<Sequential> model = make_model();
  model->compile({.optimizer = Adam(),
                  .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}});
  if (strategy->is_chief()) model->summary();

  // 3. The input pipeline with the global batch (S7-S10).
  auto [train, test] = datasets::mnist::load_data();
  const int64_t batch_size = 128 * replicas;
  data::Dataset train_ds = examples::mnist_pipeline(train, {.batch_size = batch_size});
  data::Dataset test_ds = examples::mnist_pipeline(test, {.batch_size = batch_size, .shuffle = false});

  // 4. Train (S11): the first step traces and compiles the whole step once (S19, S24).
  model->fit(train_ds, {.epochs = epochs,
                        .steps_per_epoch = 60000 / batch_size,
                        .validation_data = test_ds,
                        .validation_steps = 10000 / batch_size});

  // 5. Evaluate.
  Logs result = model->evaluate(test_ds, {.steps = 10000 / batch_size});
  if (strategy->is_chief())
    std::printf("Test loss %.4f, test accuracy %.4f\n", result.at("loss"), result.at("accuracy"));

  // Only worker 0 writes files; it checks the reload on its own (a local default-strategy
  // scope: the other workers are gone, so no collective may run).
  if (!strategy->is_chief()) return 0;
  auto local_scope = std::make_shared<distribute::DefaultStrategy>()->scope();
  // 6. Save the whole model (architecture, weights, compile arguments and optimizer state) in
  // the Keras 2 HDF5 format tf.keras reads (S12), load it back and evaluate again.
  const std::string path = "mnist_mlp.h5";
  model->save(path);
  std::unique_ptr<Model> restored = load_model(path);
  Logs again = restored->evaluate(test_ds, {.steps = 10000 / batch_size, .verbose = 0});
  // Equal up to float rounding: several replicas average their shards' accuracies.
  const bool same = std::abs(again.at("accuracy") - result.at("accuracy")) < 1e-6;
  std::printf("Reloaded from %s: test accuracy %.4f (%s)\n", path.c_str(), again.at("accuracy"),
              same ? "same" : "DIFFERENT");
  return same ? 0 : 1;
} catch (const kiln::Error& e) {
  std::cerr << "mnist_mlp: " << e.kind() << ": " << e.what() << "\n";
  distribute::mpi::abort_world_on_error(1);  // under mpirun, the other ranks must not wait forever
  return 1;
}
