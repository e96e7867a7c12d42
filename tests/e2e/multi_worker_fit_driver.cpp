// What the multi-worker fit test launches: `mpirun -np 2 multi_worker_fit_driver <dir>`. Each
// rank compiles the seed Keras model in auto_detect()'s scope (MultiWorkerMirroredStrategy),
// fits it on global batches of 64 (its 32 rows of each) and, beside it, fits a copy with the
// same initial weights on whole global batches without a strategy. It writes its distributed
// weights to <dir>/rank<r>.bin and exits 1 when they differ from the local copy by more than
// 1e-5 (relative L2), or when the two fits' losses differ. Its CSVLogger and ModelCheckpoint
// write <dir>/w<r>_*: the test checks that only worker 0 wrote.
#include <cmath>
#include <fstream>
#include <iostream>
#include <random>

#include "kiln/distribute/cluster_resolver.h"
#include "kiln/keras/keras.h"
#include "tests/testing/relative_error.h"

using namespace kiln;
using namespace kiln::keras;

namespace {

std::unique_ptr<Sequential> seed_model() {
  auto m = std::make_unique<Sequential>(std::vector<LayerHandle>{
      Flatten({.input_shape = {28, 28}}), Dense(128, {.activation = "relu"}), Dense(10)});
  m->compile({.optimizer = Adam(), .loss = SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"}});
  return m;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 2) return 2;
  std::shared_ptr<distribute::Strategy> strategy = distribute::auto_detect();
  std::mt19937 rng(5);  // the same data on every rank
  std::uniform_real_distribution<float> pixel(0.f, 1.f);
  std::uniform_int_distribution<int32_t> label(0, 9);
  HostTensor x(Shape(DType::kF32, {640, 28, 28})), y(Shape(DType::kI32, {640}));
  for (float& v : x.data<float>()) v = pixel(rng);
  for (int32_t& v : y.data<int32_t>()) v = label(rng);
  data::Dataset ds = data::Dataset::from_tensor_slices({x, y}).shuffle(64, /*seed=*/3).batch(64, true);

  std::unique_ptr<Sequential> distributed;
  {
    auto scope = strategy->scope();
    distributed = seed_model();
  }
  std::unique_ptr<Sequential> local = seed_model();
  distributed->predict(x.slice_rows(0, 8));
  local->predict(x.slice_rows(0, 8));
  local->set_weights(distributed->get_weights());

  // Each rank names its own files: only worker 0's may appear (one writer per cluster).
  const std::string files = std::string(argv[1]) + "/w" + std::to_string(strategy->worker_index());
  History h = distributed->fit(ds, {.epochs = 2,
                                    .validation_data = ds,
                                    .callbacks = {CSVLogger(files + "_history.csv"),
                                                  ModelCheckpoint(files + "_{epoch:02d}.weights.h5",
                                                                  {.verbose = 1, .save_weights_only = true})},
                                    .verbose = 1});
  History l = local->fit(ds, {.epochs = 2, .verbose = 0});
  bool ok = true;
  for (size_t e = 0; e < 2; ++e) ok = ok && std::abs(h.history.at("loss")[e] - l.history.at("loss")[e]) < 1e-5;
  std::ofstream out(std::string(argv[1]) + "/rank" + std::to_string(strategy->worker_index()) + ".bin", std::ios::binary);
  std::vector<HostTensor> wd = distributed->get_weights(), wl = local->get_weights();
  double worst = 0;
  for (size_t i = 0; i < wd.size(); ++i) {
    out.write(static_cast<const char*>(wd[i].raw_data()), static_cast<std::streamsize>(wd[i].byte_size()));
    worst = std::max(worst, testing::relative_l2_error(wd[i], wl[i]));
  }
  std::cout << "worker " << strategy->worker_index() << ": loss " << h.history.at("loss")[1] << " (local "
            << l.history.at("loss")[1] << "), val_accuracy " << h.history.at("val_accuracy")[1]
            << ", weights relative error " << worst << "\n";
  return ok && worst < 1e-5 && out.good() ? 0 : 1;
} catch (const kiln::Error& e) {
  std::cerr << "multi_worker_fit_driver: " << e.kind() << ": " << e.what() << "\n";
  return 1;
}
