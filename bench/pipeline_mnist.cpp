// pipeline_mnist: the seed's input pipeline over the real MNIST training set
// (map u8 -> f32 / 255 plus a channel axis, shuffle 10000, repeat, batch 128 drop_remainder,
// prefetch) and how many images per second it delivers; plus batching alone, which should run
// at memcpy speed. Usage: pipeline_mnist [seconds=3] [mnist_dir]
//
// The process raises glibc's mmap and trim thresholds first (KILN_BENCH_DEFAULT_MALLOC=1 skips
// that): otherwise every freed 400 KB batch shrinks the heap and the next one page-faults its
// way back in, which costs more than the pipeline itself. TensorFlow users get the same effect
// from tcmalloc; a trainer process would set it once at start-up.
#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <iostream>

#include "bench/bench_main.h"
#include "kiln/data/dataset.h"
#include "kiln/data/datasets/mnist.h"

namespace {

using kiln::DType;
using kiln::HostTensor;
using kiln::Shape;
using kiln::data::Dataset;
using kiln::data::Element;
using kiln::data::kAutotune;

/// What a training step is assumed to consume (the seed MLP on this class of machine).
constexpr double kStepImagesPerSecond = 200000;

// (u8[28,28], u8[]) -> (f32[28,28,1], u8[]): one vectorizable pass over 784 bytes.
Element normalize(Element e) {
  const HostTensor& x = e[0];
  HostTensor out(Shape(DType::kF32, {28, 28, 1}));
  const auto* src = static_cast<const uint8_t*>(x.raw_data());
  auto* dst = static_cast<float*>(out.raw_data());
  constexpr float kScale = 1.0f / 255.0f;
  for (int64_t i = 0; i < 28 * 28; ++i) dst[i] = static_cast<float>(src[i]) * kScale;
  e[0] = std::move(out);
  return e;
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
  HostTensor out(Shape(DType::kF32, {x.dims()[0], 28, 28, 1}));
  const auto* src = static_cast<const uint8_t*>(x.raw_data());
  auto* dst = static_cast<float*>(out.raw_data());
  constexpr float kScale = 1.0f / 255.0f;
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) * kScale;
  e[0] = std::move(out);
  return e;
}

// Pulls batches for `seconds` after a warm-up. On a shared machine images/s depends on what
// else runs; CPU time per image does much less, and bounds the rate on idle cores.
Rate measure(kiln::data::Iterator& it, double seconds) {
  for (int i = 0; i < 20; ++i) it.next();  // fill the shuffle buffer and the prefetch queue
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

}  // namespace

int main(int argc, char** argv) {
  const bool tuned_malloc = std::getenv("KILN_BENCH_DEFAULT_MALLOC") == nullptr;
  if (tuned_malloc) {
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
  }
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
  const std::string dir = argc > 2 ? argv[2] : kiln::datasets::mnist::default_dir();
  auto [train, test] = kiln::datasets::mnist::load_data(dir);

  Dataset seed_pipeline = Dataset::from_tensor_slices({train.x, train.y})
                              .map(normalize, kAutotune)
                              .shuffle(10000, /*seed=*/1)
                              .repeat()
                              .batch(128, /*drop_remainder=*/true)
                              .prefetch(kAutotune);
  kiln::data::Iterator it = seed_pipeline.iterator();
  const Rate rate = measure(it, seconds);
  const kiln::data::PipelineStats stats = it.stats();
  const kiln::data::StageStats* slowest = stats.slowest_stage();
  kiln::bench::JsonLine()
      .add("bench", "pipeline_mnist")
      .add("images_per_s", rate.images_per_second)
      .add("x_step_consumption", rate.images_per_second / kStepImagesPerSecond)
      .add("cpu_us_per_image", rate.cpu_us_per_image)
      .add("images_per_cpu_s", 1e6 / rate.cpu_us_per_image)
      .add("images", rate.images)
      .add("consumer_wait_fraction", stats.consumer_wait_seconds / std::max(1e-9, stats.wall_seconds))
      .add("slowest_stage", slowest ? slowest->name : std::string("none"))
      .add("cores", static_cast<int64_t>(kiln::data::available_cores()))
      .add("tuned_malloc", static_cast<int64_t>(tuned_malloc))
      .print();
  std::cerr << stats.to_string();

  // The seed pipeline with the map moved after batch: the same images in the same batches.
  Dataset vectorized = Dataset::from_tensor_slices({train.x, train.y})
                           .shuffle(10000, /*seed=*/1)
                           .repeat()
                           .batch(128, /*drop_remainder=*/true)
                           .map(normalize_batch, kAutotune)
                           .prefetch(kAutotune);
  kiln::data::Iterator vit = vectorized.iterator();
  const Rate vrate = measure(vit, seconds);
  kiln::bench::JsonLine()
      .add("bench", "pipeline_mnist.vectorized_map")
      .add("images_per_s", vrate.images_per_second)
      .add("x_step_consumption", vrate.images_per_second / kStepImagesPerSecond)
      .add("cpu_us_per_image", vrate.cpu_us_per_image)
      .add("images_per_cpu_s", 1e6 / vrate.cpu_us_per_image)
      .print();

  // Batching alone: rows already f32, so the figure is the copy into the batch tensors.
  HostTensor x32 = train.x.astype(DType::kF32);
  Dataset batch_only = Dataset::from_tensor_slices({x32, train.y}).repeat().batch(128, true);
  kiln::data::Iterator bit = batch_only.iterator();
  const Rate batch_rate = measure(bit, seconds / 2);
  kiln::bench::JsonLine()
      .add("bench", "pipeline_mnist.batch_only")
      .add("images_per_s", batch_rate.images_per_second)
      .add("cpu_us_per_image", batch_rate.cpu_us_per_image)
      .add("gb_per_s", batch_rate.images_per_second * (28 * 28 * 4 + 1) * 1e-9)
      .print();
  return 0;
}
