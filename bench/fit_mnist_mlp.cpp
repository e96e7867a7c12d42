// bench/fit_mnist_mlp: samples/s of Model::fit on the seed MLP (batch 128, Adam), against the
// bare compiled train step of bench/train_step_mlp measured in the same run. JSON lines:
//   fit_mnist_mlp       fit on an in-memory f32 pipeline (shuffle + batch, no prefetch), 5 x 200
//                       steps, and the bare SeedMlp step (host gather + step) interleaved with it
//   fit_mnist_mlp.seed  fit on the seed's pipeline (u8 -> map /255 -> shuffle -> batch -> prefetch)
// With --peer [peers_dir] it also runs the PyTorch W1 peer and prints the ratio.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "examples/mnist_pipeline.h"
#include "kiln/keras/keras.h"
#include "kiln/runtime/backend_registry.h"
#include "tests/testing/seed_mlp.h"

namespace {

using namespace kiln;
using namespace kiln::keras;

constexpr int64_t kBatch = 128, kSteps = 200, kRuns = 5;

// The bare step of bench/train_step_mlp: SeedMlp on batches gathered on the host.
class BareStep {
 public:
  explicit BareStep(const testing::MnistF32& data) : data_(data), mlp_(runtime::default_backend()), perm_(60000) {
    std::iota(perm_.begin(), perm_.end(), 0);
    testing::gather_batch(data_, perm_, 0, xb_, yb_);
    mlp_.train_step(xb_, yb_);  // compile
  }
  /// samples/s of kSteps steps.
  double run() {
    std::shuffle(perm_.begin(), perm_.end(), rng_);
    bench::Stopwatch w;
    for (int64_t s = 0; s < kSteps; ++s) {
      testing::gather_batch(data_, perm_, s * kBatch, xb_, yb_);
      mlp_.train_step(xb_, yb_);
    }
    return static_cast<double>(kSteps * kBatch) / w.seconds();
  }

 private:
  const testing::MnistF32& data_;
  testing::SeedMlp mlp_;
  std::vector<int32_t> perm_;
  HostTensor xb_{Shape(DType::kF32, {kBatch, 784})}, yb_{Shape(DType::kI32, {kBatch})};
  std::mt19937 rng_{0};
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct FitFigures {
  double samples_per_s = 0, bare_samples_per_s = 0, first_epoch_s = 0, input_wait = 0;
};

// Fits the seed model for kRuns epochs of kSteps steps after one warm-up epoch (compile).
// After each epoch the bare step runs kSteps steps, so both see the same machine load (the
// prefetch buffer refills meanwhile, as it would during a validation pass). Medians.
FitFigures fit_samples_per_s(const data::Dataset& ds, BareStep& bare) {
  Sequential model({Flatten({.input_shape = {28, 28}}), Dense(128, {.activation = "relu"}), Dense(10)});
  model.compile({.optimizer = Adam(), .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  FitFigures f;
  std::vector<double> rates, waits, bare_rates;
  auto timer = std::make_shared<LambdaCallback>(LambdaCallbackOptions{.on_epoch_end = [&](int epoch, const Logs&) {
    const EpochStats& s = model.last_epoch_stats();
    if (epoch == 0) {
      f.first_epoch_s = s.train_seconds;
      return;
    }
    rates.push_back(static_cast<double>(s.samples) / s.train_seconds);
    waits.push_back(s.input_wait_fraction);
    bare_rates.push_back(bare.run());
  }});
  model.fit(ds, {.epochs = 1 + kRuns, .steps_per_epoch = kSteps, .callbacks = {timer}, .verbose = 0});
  f.samples_per_s = median(rates);
  f.bare_samples_per_s = median(bare_rates);
  f.input_wait = median(waits);
  return f;
}

void print(const char* name, const FitFigures& f) {
  bench::JsonLine line;
  line.add("bench", name)
      .add("samples_per_s", f.samples_per_s)
      .add("bare_step_samples_per_s", f.bare_samples_per_s)
      .add("fit_over_bare", f.samples_per_s / f.bare_samples_per_s)
      .add("input_wait_fraction", f.input_wait)
      .add("first_epoch_s", f.first_epoch_s);
  line.print();
}

}  // namespace

int main(int argc, char** argv) {
  const bool peer = argc > 1 && std::string(argv[1]) == "--peer";
  const std::string peers = argc > 2 ? argv[2] : "../shared/peers";

  testing::MnistF32 mnist = testing::load_mnist_f32();
  BareStep bare(mnist);

  // In memory: f32 images already normalized; the pipeline shuffles and batches on the
  // consumer thread (no prefetch), which is the bare step's host work. On a 2-core host a
  // prefetch thread competes with the step's OpenMP threads; the seed line shows that cost.
  data::Dataset in_memory = data::Dataset::from_tensor_slices({mnist.x_train.reshape({60000, 28, 28}), mnist.y_train})
                                .shuffle(10000, /*seed=*/1)
                                .repeat()
                                .batch(kBatch, /*drop_remainder=*/true);
  const FitFigures fit = fit_samples_per_s(in_memory, bare);
  print("fit_mnist_mlp", fit);

  auto [train, test] = datasets::mnist::load_data();
  print("fit_mnist_mlp.seed", fit_samples_per_s(examples::mnist_pipeline(train, {.batch_size = kBatch}), bare));

  if (peer) {
    const double torch = bench::pytorch_peer(peers, "w1", "samples_per_s_epoch_2_to_E", "--epochs 2");
    bench::JsonLine p;
    p.add("bench", "fit_mnist_mlp.peer")
        .add("pytorch_w1_samples_per_s", torch)
        .add("fit_over_pytorch", torch > 0 ? fit.samples_per_s / torch : 0.0);
    p.print();
  }
  return 0;
}
