// The seed's program (the Colab TPU tutorial) in Kiln, written as its Python is, section by
// section: find the devices and pick a strategy; build and compile the model inside
// strategy.scope(); get_dataset() with the seed's preprocess, shuffle, repeat, batch with
// drop_remainder and prefetch; fit 5 epochs with validation; evaluate; save the whole model as
// .h5 and load it back.
//
//   build/examples/mnist_mlp [epochs=5] [output_dir=kiln_output]
//
// Under mpirun -np N every process runs this program (MultiWorkerMirroredStrategy); worker 0
// alone prints and writes files.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <tuple>

#include "kiln/kiln.h"

using namespace kiln;

// The seed's get_dataset(batch_size, is_training).
data::Dataset get_dataset(int64_t batch_size, bool is_training = true) {
  // 1. Load the data (here MNIST).
  auto [train, test] = keras::datasets::mnist::load_data();
  auto [images, labels] = is_training ? train : test;

  // 2. The preprocessing function, with Kiln ops: traced once into a compiled program and run
  // over whole batches.
  auto preprocess = [](Tensor image, Tensor label) {
    image = cast(image, DType::kF32) / 255.0;  // normalize
    image = expand_dims(image, -1);            // add a channel dim: (28, 28) -> (28, 28, 1)
    return std::tuple{image, label};
  };

  // 3. The Dataset.
  auto dataset = data::Dataset::from_tensor_slices({images, labels});
  dataset = dataset.map(preprocess, {.num_parallel_calls = data::kAutotune, .name = "preprocess"});
  if (is_training) {
    // Training: shuffle, repeat, batch, prefetch.
    dataset = dataset.shuffle(10000);
    dataset = dataset.repeat();  // repeats forever; fit's steps_per_epoch ends each epoch
    dataset = dataset.batch(batch_size, /*drop_remainder=*/true);  // fixed shapes (S10)
  } else {
    // Validation and test: batch only.
    dataset = dataset.batch(batch_size, /*drop_remainder=*/true);
  }
  // 4. Prefetch, so preparing the data overlaps the model's computation.
  dataset = dataset.prefetch(data::kAutotune);
  return dataset;
}

int main(int argc, char** argv) try {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::filesystem::path output_dir = argc > 2 ? argv[2] : "kiln_output";

  // Devices and strategy (S1-S4): mpirun -np N gives MultiWorkerMirroredStrategy,
  // KILN_CPU_DEVICES=n a MirroredStrategy over n logical CPU devices, otherwise the default
  // CPU strategy. auto_detect() says which and why.
  std::shared_ptr<distribute::Strategy> strategy = distribute::auto_detect();
  if (strategy->is_chief()) std::cout << "REPLICAS: " << strategy->num_replicas_in_sync() << "\n";

  // The model and every variable it makes, inside strategy.scope() (S5, S6).
  keras::models::Sequential model;
  {
    auto scope = strategy->scope();
    // The seed writes Flatten(input_shape=(28, 28)) although its preprocess adds a channel dim;
    // Keras, and Kiln, then warn and flatten (28, 28, 1). Here the shape the data has.
    model = keras::models::Sequential({
        keras::layers::Flatten({.input_shape = {28, 28, 1}}),
        keras::layers::Dense(128, {.activation = "relu"}),
        keras::layers::Dense(10),
    });
    model.compile({.optimizer = keras::optimizers::Adam(),
                   .loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                   .metrics = {"accuracy"}});
  }
  if (strategy->is_chief()) model.summary();

  // The global batch: per-replica batch x replicas (S9, S18).
  const int64_t BATCH_SIZE_PER_REPLICA = 128;
  const int64_t GLOBAL_BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy->num_replicas_in_sync();
  data::Dataset train_dataset = get_dataset(GLOBAL_BATCH_SIZE, /*is_training=*/true);
  data::Dataset val_dataset = get_dataset(GLOBAL_BATCH_SIZE, /*is_training=*/false);

  // Train (S11). The dataset repeats forever, so steps_per_epoch ends each epoch. The first
  // step traces and compiles the whole step once (S19, S24).
  const int64_t train_steps_per_epoch = 60000 / GLOBAL_BATCH_SIZE;
  const int64_t val_steps = 10000 / GLOBAL_BATCH_SIZE;
  keras::History history = model.fit(train_dataset, {.epochs = epochs,
                                                     .steps_per_epoch = train_steps_per_epoch,
                                                     .validation_data = val_dataset,
                                                     .validation_steps = val_steps});

  // Evaluate.
  keras::Logs result = model.evaluate(val_dataset, {.steps = val_steps});
  if (strategy->is_chief())
    std::printf("Test loss %.4f, test accuracy %.4f\n", result.at("loss"), result.at("accuracy"));

  // Save the whole model (architecture + weights + optimizer state) in the Keras 2 HDF5 format
  // (S12), then load it for inference as tf.keras.models.load_model does. Only worker 0 writes
  // files, and it checks the reload on its own (the other workers are gone, so no collective
  // may run: a local default-strategy scope).
  if (!strategy->is_chief()) return 0;
  auto local_scope = std::make_shared<distribute::DefaultStrategy>()->scope();
  std::filesystem::create_directories(output_dir);
  const std::string path = (output_dir / "mnist_mlp.h5").string();
  model.save(path);
  std::unique_ptr<keras::Model> restored = keras::models::load_model(path);
  keras::Logs again = restored->evaluate(val_dataset, {.steps = val_steps, .verbose = 0});
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
