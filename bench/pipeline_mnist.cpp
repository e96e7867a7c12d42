// pipeline_mnist: the seed's input pipeline over the real MNIST training set
// (map u8 -> f32 / 255 plus a channel axis, declared stateless; shuffle 10000, repeat, batch
// 128 drop_remainder, prefetch) and how many images per second it delivers, against the rate at which the seed
// MLP's train step (tests/testing/seed_mlp.h, as bench/train_step_mlp) consumes images,
// measured in the same run; plus the same preprocess written with Kiln ops (traced_map) against
// the hand-written loop, a vectorized map, and batching alone, which should run at memcpy speed. Usage: pipeline_mnist [seconds=1] [runs=5] [mnist_dir]
//
// The machine is shared, so the figures are medians of `runs` windows, and the pipeline and
// train-step windows alternate so a load change hits both sides of the ratio alike.
//
// The process raises glibc's mmap and trim thresholds first (KILN_BENCH_DEFAULT_MALLOC=1 skips
// that). It mattered most when the map's 3 KB output per image came from glibc on a worker
// thread and was freed on another (worker arenas shrank and page-faulted back); those now come
// from HostTensor's storage cache and batches from batch's BufferPool, so what is left for
// glibc is the shapes' dims and batch buffers past the pool's idle bound. TensorFlow users
// get the same effect from tcmalloc; a trainer process would set it once at start-up.
//
// Where the time goes: the stats table printed to stderr gives each stage's own busy time;
// for a CPU profile, `perf record -e cpu-clock` works on this VM (no hardware counters).
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <numeric>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

#include "bench/bench_main.h"
#include "kiln/data/dataset.h"
#include "kiln/data/datasets/mnist.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/shape.h"
#include "kiln/trace/traced_map.h"
#include "tests/testing/seed_mlp.h"

namespace {

using kiln::DType;
using kiln::HostTensor;
using kiln::Shape;
using kiln::data::Dataset;
using kiln::data::Element;
using kiln::data::kAutotune;

// (u8[28,28], u8[]) -> (f32[28,28,1], u8[]): one vectorizable pass over 784 bytes.
Element normalize(Element e) {
  const HostTensor& x = e[0];
  HostTensor out = HostTensor::uninitialized(Shape(DType::kF32, {28, 28, 1}));
  const auto* src = static_cast<const uint8_t*>(x.raw_data());
  auto* dst = static_cast<float*>(out.raw_data());
  constexpr float kScale = 1.0f / 255.0f;
  for (int64_t i = 0; i < 28 * 28; ++i) dst[i] = static_cast<float>(src[i]) * kScale;
  e[0] = std::move(out);
  return e;
}

// The seed's preprocess as its tf.data original is written, with Kiln ops: traced once into a
// compiled program that map_and_batch runs once per batch.
std::tuple<kiln::Tensor, kiln::Tensor> preprocess(kiln::Tensor image, kiln::Tensor label) {
  image = kiln::cast(image, DType::kF32) / 255.0;
  image = kiln::expand_dims(image, -1);
  return {image, label};
}

struct Rate {
  double images_per_second = 0;
  double cpu_us_per_image = 0;  // process CPU time (all pipeline threads) per image
  int64_t images = 0;
};

// The same conversion on a whole batch (u8[B,28,28] -> f32[B,28,28,1]): tf.data's "vectorize
// the map" advice, one allocation per batch instead of one per image.
Element normalize_batch(Element e) {
  const HostTensor& x = e[0];
  const int64_t n = x.num_elements();
  HostTensor out = HostTensor::uninitialized(Shape(DType::kF32, {x.dims()[0], 28, 28, 1}));
  const auto* src = static_cast<const uint8_t*>(x.raw_data());
  auto* dst = static_cast<float*>(out.raw_data());
  constexpr float kScale = 1.0f / 255.0f;
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) * kScale;
  e[0] = std::move(out);
  return e;
}

// Pulls batches for `seconds`. On a shared machine images/s depends on what else runs; CPU
// time per image does much less, and bounds the rate on idle cores.
Rate measure_window(kiln::data::Iterator& it, double seconds) {
  const std::clock_t cpu0 = std::clock();
  kiln::bench::Stopwatch clock;
  int64_t images = 0;
  while (clock.seconds() < seconds) {
    std::optional<Element> batch = it.next();
    if (!batch) break;
    images += (*batch)[0].dims()[0];
  }
  const double cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  return {static_cast<double>(images) / clock.seconds(), cpu * 1e6 / std::max<int64_t>(1, images), images};
}

void warm_up(kiln::data::Iterator& it) {
  for (int i = 0; i < 100; ++i) it.next();  // fill the shuffle buffer and the prefetch queue
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

/// The median of `runs` windows of `seconds` each, on one warmed-up iterator.
Rate measure(kiln::data::Iterator& it, double seconds, int runs) {
  warm_up(it);
  std::vector<double> rate, cpu;
  int64_t images = 0;
  for (int r = 0; r < runs; ++r) {
    const Rate w = measure_window(it, seconds);
    rate.push_back(w.images_per_second);
    cpu.push_back(w.cpu_us_per_image);
    images += w.images;
  }
  return {median(rate), median(cpu), images};
}

/// The seed MLP's train step (bench/train_step_mlp's loop: gather a shuffled batch, step).
class TrainStep {
 public:
  TrainStep()
      : data_(kiln::testing::load_mnist_f32()),
        mlp_(kiln::runtime::default_backend()),
        perm_(60000),
        xb_(Shape(DType::kF32, {kBatch, 784})),
        yb_(Shape(DType::kI32, {kBatch})) {
    std::iota(perm_.begin(), perm_.end(), 0);
    std::shuffle(perm_.begin(), perm_.end(), rng_);
    kiln::testing::gather_batch(data_, perm_, 0, xb_, yb_);
    for (int i = 0; i < 5; ++i) mlp_.train_step(xb_, yb_);  // trace, compile, warm caches
  }
  /// Images per second over `steps` steps.
  double images_per_second(int steps) {
    kiln::bench::Stopwatch w;
    for (int s = 0; s < steps; ++s) {
      if ((next_ + 1) * kBatch > static_cast<int64_t>(perm_.size())) {
        std::shuffle(perm_.begin(), perm_.end(), rng_);
        next_ = 0;
      }
      kiln::testing::gather_batch(data_, perm_, next_++ * kBatch, xb_, yb_);
      mlp_.train_step(xb_, yb_);
    }
    return static_cast<double>(steps * kBatch) / w.seconds();
  }

 private:
  static constexpr int64_t kBatch = 128;
  kiln::testing::MnistF32 data_;
  kiln::testing::SeedMlp mlp_;
  std::vector<int32_t> perm_;
  HostTensor xb_, yb_;
  std::mt19937 rng_{0};
  int64_t next_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const bool tuned_malloc = std::getenv("KILN_BENCH_DEFAULT_MALLOC") == nullptr;
  if (tuned_malloc) {
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
  }
  const double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  const std::string dir = argc > 3 ? argv[3] : kiln::datasets::mnist::default_dir();
  auto [train, test] = kiln::datasets::mnist::load_data(dir);

  // normalize is declared stateless, so Kiln runs it after the shuffle and repeat (dataset.h's
  // MapOptions): the same batches, with a shuffle buffer of 784-byte views instead of 3 KB
  // images. pipeline_mnist.stateful_map below is the same recipe without the promise.
  auto seed_pipeline = [&](bool stateless) {
    return Dataset::from_tensor_slices({train.x, train.y})
        .map(normalize, {.num_parallel_calls = kAutotune, .stateless = stateless})
        .shuffle(10000, /*seed=*/1)
        .repeat()
        .batch(128, /*drop_remainder=*/true)
        .prefetch(kAutotune);
  };
  kiln::data::Iterator it = seed_pipeline(/*stateless=*/true).iterator();
  TrainStep step;
  warm_up(it);
  std::vector<double> pipeline_rates, step_rates, cpu;
  int64_t images = 0;
  for (int r = 0; r < runs; ++r) {
    const Rate w = measure_window(it, seconds);
    pipeline_rates.push_back(w.images_per_second);
    cpu.push_back(w.cpu_us_per_image);
    images += w.images;
    // Let the pipeline refill its buffers and block, so its threads do not compete with the
    // step (a trainer's step runs while the pipeline idles on a full prefetch buffer, too).
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    step_rates.push_back(step.images_per_second(/*steps=*/100));
  }
  const Rate rate{median(pipeline_rates), median(cpu), images};
  const double step_rate = median(step_rates);
  const kiln::data::PipelineStats stats = it.stats();
  const kiln::data::StageStats* slowest = stats.slowest_stage();
  kiln::bench::JsonLine()
      .add("bench", "pipeline_mnist")
      .add("images_per_s", rate.images_per_second)
      .add("train_step_images_per_s", step_rate)
      .add("x_step_consumption", rate.images_per_second / step_rate)
      .add("images_per_s_min", *std::min_element(pipeline_rates.begin(), pipeline_rates.end()))
      .add("images_per_s_max", *std::max_element(pipeline_rates.begin(), pipeline_rates.end()))
      .add("runs", static_cast<int64_t>(runs))
      .add("cpu_us_per_image", rate.cpu_us_per_image)
      .add("images_per_cpu_s", 1e6 / rate.cpu_us_per_image)
      .add("images", rate.images)
      .add("consumer_wait_fraction", stats.consumer_wait_seconds / std::max(1e-9, stats.wall_seconds))
      .add("slowest_stage", slowest ? slowest->name : std::string("none"))
      .add("cores", static_cast<int64_t>(kiln::data::available_cores()))
      .add("tuned_malloc", static_cast<int64_t>(tuned_malloc))
      .print();
  std::cerr << stats.to_string();

  // One JSON line for a variant of the pipeline, measured on its own iterator.
  auto report_variant = [&](const std::string& name, const Dataset& variant, double window) {
    kiln::data::Iterator vit = variant.iterator();
    const Rate r = measure(vit, window, runs);
    kiln::bench::JsonLine()
        .add("bench", "pipeline_mnist." + name)
        .add("images_per_s", r.images_per_second)
        .add("x_step_consumption", r.images_per_second / step_rate)
        .add("cpu_us_per_image", r.cpu_us_per_image)
        .add("images_per_cpu_s", 1e6 / r.cpu_us_per_image)
        .print();
  };
  report_variant("stateful_map", seed_pipeline(/*stateless=*/false), seconds);

  // The seed pipeline with its preprocess written with Kiln ops, against the hand-written loop,
  // windows alternated so a load change hits both.
  {
    kiln::data::Iterator hand = seed_pipeline(/*stateless=*/true).iterator();
    kiln::data::Iterator traced = Dataset::from_tensor_slices({train.x, train.y})
                                      .map(preprocess, {.num_parallel_calls = kAutotune, .name = "preprocess"})
                                      .shuffle(10000, /*seed=*/1)
                                      .repeat()
                                      .batch(128, /*drop_remainder=*/true)
                                      .prefetch(kAutotune)
                                      .iterator();
    warm_up(hand);
    warm_up(traced);
    std::vector<double> hand_rates, traced_rates, traced_cpu;
    for (int r = 0; r < runs; ++r) {  // ABBA: neither side always follows the other
      auto measure_traced = [&] {
        const Rate t = measure_window(traced, seconds);
        traced_rates.push_back(t.images_per_second);
        traced_cpu.push_back(t.cpu_us_per_image);
      };
      if (r % 2 == 1) measure_traced();
      hand_rates.push_back(measure_window(hand, seconds).images_per_second);
      if (r % 2 == 0) measure_traced();
    }
    kiln::bench::JsonLine()
        .add("bench", "pipeline_mnist.traced_map")
        .add("images_per_s", median(traced_rates))
        .add("hand_written_images_per_s", median(hand_rates))
        .add("traced_over_hand_written", median(traced_rates) / median(hand_rates))
        .add("x_step_consumption", median(traced_rates) / step_rate)
        .add("cpu_us_per_image", median(traced_cpu))
        .add("target", 0.7)
        .print();
    std::cerr << traced.stats().to_string();
  }

  // The seed pipeline with the map moved after batch: the same images in the same batches.
  Dataset vectorized = Dataset::from_tensor_slices({train.x, train.y})
                           .shuffle(10000, /*seed=*/1)
                           .repeat()
                           .batch(128, /*drop_remainder=*/true)
                           .map(normalize_batch, kAutotune)
                           .prefetch(kAutotune);
  report_variant("vectorized_map", vectorized, seconds);

  // Batching alone: rows already f32, so the figure is the copy into the batch tensors.
  HostTensor x32 = train.x.astype(DType::kF32);
  Dataset batch_only = Dataset::from_tensor_slices({x32, train.y}).repeat().batch(128, true);
  kiln::data::Iterator bit = batch_only.iterator();
  const Rate batch_rate = measure(bit, seconds / 2, runs);
  kiln::bench::JsonLine()
      .add("bench", "pipeline_mnist.batch_only")
      .add("images_per_s", batch_rate.images_per_second)
      .add("cpu_us_per_image", batch_rate.cpu_us_per_image)
      .add("gb_per_s", batch_rate.images_per_second * (28 * 28 * 4 + 1) * 1e-9)
      .print();
  return 0;
}
