// bench/train_step_mobilenet: a real architecture (issue 35 item 4). keras.applications'
// MobileNetV2 (alpha 1.0, 224 x 224 x 3, 1000 classes, batch 32) whole train step through fit
// (forward, sparse crossentropy from logits, backward, SGD with momentum 0.9, accuracy), and
// ResNet-50 inference (predict on a batch of 32), beside torchvision's same architectures in
// eager PyTorch on the same machine in the same run (bench/torch_mobilenet_step.py, at its
// faster memory layout). Kiln's step is fit's: the median of the times between
// on_train_batch_begin and on_train_batch_end after the first step (trace and compile).
//
//   build/bench/train_step_mobilenet [--steps N] [--image-size S] [--no-peer] [peers dir]
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/fit_step_time.h"
#include "kiln/keras/applications/applications.h"
#include "kiln/keras/keras.h"

namespace {

using namespace kiln;
using namespace kiln::keras;

constexpr int64_t kBatch = 32;
constexpr int64_t kClasses = 1000;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

HostTensor random_images(int64_t n, int64_t size, uint32_t seed) {
  std::vector<float> px(static_cast<size_t>(n * size * size * 3));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& p : px) p = u(rng);
  return HostTensor::from_vector<float>({n, size, size, 3}, px);
}

// Median ms per fit step of MobileNetV2 over `steps` steps after one warm-up step.
double mobilenet_ms_per_step(int64_t size, int64_t steps) {
  Functional model = applications::MobileNetV2({.input_shape = {size, size, 3}, .classifier_activation = ""});
  model.compile({.optimizer = SGD({.learning_rate = 0.01, .momentum = 0.9}),
                 .loss = SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"}});
  std::vector<int32_t> labels(static_cast<size_t>(kBatch));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>((i * 37) % kClasses);
  data::Dataset train = data::Dataset::from_tensor_slices(
                            {random_images(kBatch, size, 1), HostTensor::from_vector<int32_t>({kBatch}, labels)})
                            .repeat()
                            .batch(kBatch, /*drop_remainder=*/true);
  return bench::median_fit_step_ms(model, train, steps);
}

// Median ms of ResNet-50's predict on one batch over `steps` calls after one warm-up call.
double resnet50_ms_per_batch(int64_t size, int64_t steps) {
  Functional model = applications::ResNet50({.input_shape = {size, size, 3}});
  const HostTensor x = random_images(kBatch, size, 2);
  model.predict(x, {.batch_size = kBatch});
  std::vector<double> ms;
  for (int64_t i = 0; i < steps; ++i) {
    const auto begin = std::chrono::steady_clock::now();
    model.predict(x, {.batch_size = kBatch});
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count());
  }
  return median(ms);
}

}  // namespace

int main(int argc, char** argv) try {
  int64_t steps = 5, size = 224;
  bool peer = true;
  std::string peers = "../shared/peers";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-peer") peer = false;
    else if (a == "--steps" && i + 1 < argc) steps = std::atoll(argv[++i]);
    else if (a == "--image-size" && i + 1 < argc) size = std::atoll(argv[++i]);
    else peers = a;
  }
  const double mobilenet_ms = mobilenet_ms_per_step(size, steps);
  const double resnet_ms = resnet50_ms_per_batch(size, steps);
  auto per_s = [](double ms) { return ms > 0 ? 1000.0 * static_cast<double>(kBatch) / ms : 0.0; };
  bench::JsonLine line;
  line.add("bench", "train_step_mobilenet").add("image_size", size).add("batch", kBatch).add("steps", steps)
      .add("kiln_mobilenet_v2_train_ms", mobilenet_ms).add("kiln_mobilenet_v2_train_samples_per_s", per_s(mobilenet_ms))
      .add("kiln_resnet50_inference_ms", resnet_ms).add("kiln_resnet50_inference_samples_per_s", per_s(resnet_ms));
  if (peer) {
    const std::string json = bench::run_pytorch_script(
        KILN_TORCH_MOBILENET_STEP, str_cat("--threads 2 --image-size ", size, " --batch ", kBatch, " --inference-batch ",
                                           kBatch, " --steps ", steps, " --peers ", peers));
    const double torch_train = bench::json_number(json, "mobilenet_v2_train_ms_median");
    const double torch_infer = bench::json_number(json, "resnet50_inference_ms_median");
    line.add("pytorch_mobilenet_v2_train_ms", torch_train).add("pytorch_resnet50_inference_ms", torch_infer)
        .add("pytorch_blas", bench::json_string(json, "kind", "unavailable"))
        .add("kiln_over_pytorch_mobilenet_v2_train", mobilenet_ms > 0 && torch_train > 0 ? torch_train / mobilenet_ms : 0.0)
        .add("kiln_over_pytorch_resnet50_inference", resnet_ms > 0 && torch_infer > 0 ? torch_infer / resnet_ms : 0.0);
  }
  line.print();
  return 0;
} catch (const kiln::Error& e) {
  std::cerr << e.what() << "\n";
  return 1;
}
