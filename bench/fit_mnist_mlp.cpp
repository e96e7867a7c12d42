// bench/fit_mnist_mlp: samples/s of Model::fit on the seed MLP (batch 128, Adam), against the
// bare compiled train step of bench/train_step_mlp measured in the same run. JSON lines:
//   fit_mnist_mlp.bare  the SeedMlp step on pre-gathered batches (median of 5 x 200 steps)
//   fit_mnist_mlp       fit on an in-memory f32 pipeline (batch + prefetch), 5 x 200 steps
//   fit_mnist_mlp.seed  fit on the seed's pipeline (u8 -> map /255 -> shuffle -> batch -> prefetch)
// With --peer [peers_dir] it also runs the PyTorch W1 peer and prints the ratio.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "kiln/keras/keras.h"
#include "kiln/runtime/backend_registry.h"
#include "tests/testing/seed_mlp.h"

namespace {

using namespace kiln;
using namespace kiln::keras;

constexpr int64_t kBatch = 128, kSteps = 200, kRuns = 5;

// The PyTorch peer's samples_per_s_epoch_2_to_E for W1 (0 when unavailable).
double pytorch_w1(const std::string& peers) {
  const std::string cmd = "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=2 /usr/bin/python3 " + peers +
                          "/pytorch/bench_torch.py --workload w1 --threads 2 --epochs 2 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return 0;
  std::string out;
  char buf[4096];
  while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
  pclose(p);
  const std::string key = "\"samples_per_s_epoch_2_to_E\":";
  const size_t at = out.find(key);
  return at == std::string::npos ? 0.0 : std::atof(out.c_str() + at + key.size());
}

double bare_step_samples_per_s(const testing::MnistF32& data) {
  testing::SeedMlp mlp(runtime::default_backend());
  std::vector<int32_t> perm(60000);
  std::iota(perm.begin(), perm.end(), 0);
  HostTensor xb(Shape(DType::kF32, {kBatch, 784})), yb(Shape(DType::kI32, {kBatch}));
  testing::gather_batch(data, perm, 0, xb, yb);
  mlp.train_step(xb, yb);  // compile
  std::vector<double> ms;
  std::mt19937 rng(0);
  for (int r = 0; r < kRuns; ++r) {
    std::shuffle(perm.begin(), perm.end(), rng);
    bench::Stopwatch w;
    for (int64_t s = 0; s < kSteps; ++s) {
      testing::gather_batch(data, perm, s * kBatch, xb, yb);
      mlp.train_step(xb, yb);
    }
    ms.push_back(w.seconds() * 1e3 / kSteps);
  }
  std::sort(ms.begin(), ms.end());
  return kBatch / (ms[ms.size() / 2] / 1e3);
}

struct FitFigures {
  double samples_per_s = 0, first_epoch_s = 0, input_wait = 0;
};

// Fits the seed model for kRuns epochs of kSteps steps after one warm-up epoch (compile);
// samples/s is the median epoch's.
FitFigures fit_samples_per_s(const data::Dataset& ds) {
  Sequential model({Flatten({.input_shape = {28, 28}}), Dense(128, {.activation = "relu"}), Dense(10)});
  model.compile({.optimizer = Adam(), .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  FitFigures f;
  std::vector<double> rates, waits;
  auto timer = std::make_shared<LambdaCallback>(LambdaCallbackOptions{.on_epoch_end = [&](int epoch, const Logs&) {
    const EpochStats& s = model.last_epoch_stats();
    if (epoch == 0) {
      f.first_epoch_s = s.train_seconds;
      return;
    }
    rates.push_back(static_cast<double>(s.samples) / s.train_seconds);
    waits.push_back(s.input_wait_fraction);
  }});
  model.fit(ds, {.epochs = 1 + kRuns, .steps_per_epoch = kSteps, .callbacks = {timer}, .verbose = 0});
  std::sort(rates.begin(), rates.end());
  std::sort(waits.begin(), waits.end());
  f.samples_per_s = rates[rates.size() / 2];
  f.input_wait = waits[waits.size() / 2];
  return f;
}

void print(const char* name, const FitFigures& f, double bare) {
  bench::JsonLine line;
  line.add("bench", name)
      .add("samples_per_s", f.samples_per_s)
      .add("bare_step_samples_per_s", bare)
      .add("fit_over_bare", f.samples_per_s / bare)
      .add("input_wait_fraction", f.input_wait)
      .add("first_epoch_s", f.first_epoch_s);
  line.print();
}

}  // namespace

int main(int argc, char** argv) {
  const bool peer = argc > 1 && std::string(argv[1]) == "--peer";
  const std::string peers = argc > 2 ? argv[2] : "../shared/peers";

  testing::MnistF32 mnist = testing::load_mnist_f32();
  const double bare = bare_step_samples_per_s(mnist);
  bench::JsonLine b;
  b.add("bench", "fit_mnist_mlp.bare").add("samples_per_s", bare);
  b.print();

  // In memory: f32 images already normalized, so the pipeline only slices and batches.
  data::Dataset in_memory = data::Dataset::from_tensor_slices({mnist.x_train.reshape({60000, 28, 28}), mnist.y_train})
                                .shuffle(10000, /*seed=*/1)
                                .repeat()
                                .batch(kBatch, /*drop_remainder=*/true)
                                .prefetch(data::kAutotune);
  const FitFigures fit = fit_samples_per_s(in_memory);
  print("fit_mnist_mlp", fit, bare);

  auto [train, test] = datasets::mnist::load_data();
  auto normalize = [](data::Element e) -> data::Element {
    HostTensor x = e[0].astype(DType::kF32);
    for (float& v : x.data<float>()) v *= 1.0f / 255.0f;
    return {x, e[1].astype(DType::kI32)};
  };
  data::Dataset seed = data::Dataset::from_tensor_slices({train.x, train.y})
                           .map(normalize, data::kAutotune)
                           .shuffle(10000, /*seed=*/1)
                           .repeat()
                           .batch(kBatch, /*drop_remainder=*/true)
                           .prefetch(data::kAutotune);
  print("fit_mnist_mlp.seed", fit_samples_per_s(seed), bare);

  if (peer) {
    const double torch = pytorch_w1(peers);
    bench::JsonLine p;
    p.add("bench", "fit_mnist_mlp.peer")
        .add("pytorch_w1_samples_per_s", torch)
        .add("fit_over_pytorch", torch > 0 ? fit.samples_per_s / torch : 0.0);
    p.print();
  }
  return 0;
}
