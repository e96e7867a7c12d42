// pipeline_mnist: the seed's input pipeline over the real MNIST training set
// (map u8 -> f32 / 255 plus a channel axis, shuffle 10000, repeat, batch 128 drop_remainder,
// prefetch) and how many images per second it delivers; plus batching alone, which should run
// at memcpy speed. Usage: pipeline_mnist [seconds=3] [mnist_dir]
#include <cstdlib>
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

// Pulls batches for `seconds` after a warm-up and returns images/s.
double images_per_second(kiln::data::Iterator& it, double seconds, int64_t* images_out) {
  for (int i = 0; i < 20; ++i) it.next();  // fill the shuffle buffer and the prefetch queue
  kiln::bench::Stopwatch clock;
  int64_t images = 0;
  while (clock.seconds() < seconds) {
    std::optional<Element> batch = it.next();
    if (!batch) break;
    images += (*batch)[0].dims()[0];
  }
  *images_out = images;
  return static_cast<double>(images) / clock.seconds();
}

}  // namespace

int main(int argc, char** argv) {
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
  int64_t images = 0;
  const double rate = images_per_second(it, seconds, &images);
  const kiln::data::PipelineStats stats = it.stats();
  const kiln::data::StageStats* slowest = stats.slowest_stage();
  kiln::bench::JsonLine()
      .add("bench", "pipeline_mnist")
      .add("images_per_s", rate)
      .add("x_step_consumption", rate / kStepImagesPerSecond)
      .add("images", images)
      .add("consumer_wait_fraction", stats.consumer_wait_seconds / std::max(1e-9, stats.wall_seconds))
      .add("slowest_stage", slowest ? slowest->name : std::string("none"))
      .add("cores", static_cast<int64_t>(kiln::data::available_cores()))
      .print();
  std::cerr << stats.to_string();

  // Batching alone: rows already f32, so the figure is the copy into the batch tensors.
  HostTensor x32 = train.x.astype(DType::kF32);
  Dataset batch_only = Dataset::from_tensor_slices({x32, train.y}).repeat().batch(128, true);
  kiln::data::Iterator bit = batch_only.iterator();
  const double batch_rate = images_per_second(bit, seconds / 2, &images);
  kiln::bench::JsonLine()
      .add("bench", "pipeline_mnist.batch_only")
      .add("images_per_s", batch_rate)
      .add("gb_per_s", batch_rate * (28 * 28 * 4 + 1) * 1e-9)
      .print();
  return 0;
}
