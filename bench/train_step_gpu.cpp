// bench/train_step_gpu: Kiln's W1, W2 and W3 train steps on the GPU (the CUDA backend, cuda:0),
// the workloads bench/torch_gpu_steps.py runs in eager PyTorch on the same GPU, with the same
// shapes, batch sizes, loss (sparse softmax cross-entropy from logits, mean) and Adam (lr 1e-3,
// betas 0.9/0.999, eps 1e-7, Keras's):
//   W1  the seed MLP, 784 -> Dense(128, relu) -> Dense(10), batch 128, float32
//   W2  the Keras MNIST convnet (tests/testing/seed_cnn.h: dropout 0.5), batch 128, float32
//   W3  the wide MLP, 784 -> 1024 relu -> 1024 relu -> 10, batch 512, under float32 and
//       mixed_bfloat16 (--policy float32|mixed_bfloat16|both, default both), with its matmul
//       TFLOP/s and, given --peak-tflops (the GPU's dense bf16 peak), its fraction of it
// As the peer does: random MNIST-shaped batches already on the GPU (copied once before timing;
// the convnet's dropout keys too, one per step), --warmup steps (default 20, the first one
// traces and compiles), then the median of --steps (default 100) steps, each timed alone on the
// host around a step that has finished on the GPU (the loss is read back as fit reads it, which
// waits for the step: Device::execute itself returns once it is queued; PyTorch's step, timed between
// CUDA events, does not read its loss: the difference is one 4-byte copy per step).
// --workload w1|w2|w3 runs one workload only; --device (default cuda:0) names another device,
// e.g. cpu to try the program here with a few steps (its figures are not the CPU benches').
//
// One JSON line per workload and dtype, keyed as torch_gpu_steps.py's lines (workload, dtype,
// batch, median_step_ms; samples_per_s is the batch over the median step, the peer's
// samples_per_s_median_step), so scripts/device_check.sh can put the two side by side. A
// workload that fails prints its error and the exit status is 1. Without a CUDA device (or a
// build without the CUDA backend) it prints one JSON line saying why and exits 0.
#include <algorithm>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/policy_compare.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/runtime/gpus.h"
#include "tests/testing/random_image_batch.h"
#include "tests/testing/seed_cnn.h"
#include "tests/testing/seed_mlp.h"

namespace {

using namespace kiln;

struct Workload {
  std::string name;             // torch_gpu_steps.py's
  int64_t batch;
  std::vector<int64_t> widths;  // the MLP's widths; empty for the convnet
};

/// Matmul flop per sample of the MLP's forward pass. A train step counts 3x this, as the peer
/// does (the forward and both gradient matmuls, the first layer's unneeded dX included).
double mlp_forward_flop(const std::vector<int64_t>& widths) {
  double flop = 0;
  for (size_t i = 0; i + 1 < widths.size(); ++i) flop += 2.0 * static_cast<double>(widths[i] * widths[i + 1]);
  return flop;
}

/// The models of one workload's run; freed before the next one.
struct Models {
  std::unique_ptr<testing::SeedMlp> mlp;
  std::unique_ptr<testing::SeedCnn> cnn;
};

/// The workload's step on `gpu` with every input already on its device: the model (kept alive
/// in `models`) and the buffers are made here, nothing is copied in the timed steps. `steps`:
/// how many distinct dropout keys the convnet's steps cycle through.
bench::PolicyStep make_step(const Workload& w, DType compute, const std::shared_ptr<runtime::Backend>& gpu,
                            int64_t steps, Models& models) {
  runtime::Device& device = gpu->device();
  if (!w.widths.empty()) {
    testing::SeedMlp* mlp = (models.mlp = std::make_unique<testing::SeedMlp>(gpu, 0, compute, w.widths)).get();
    const auto [x, y] = testing::random_image_batch({w.batch, w.widths[0]}, 1);
    const std::vector<runtime::Buffer> xy = {device.to_device(x), device.to_device(y)};
    return {[mlp, xy](int64_t) { mlp->train_step_on_device(xy); },
            [mlp] { return mlp->train_function().last_executable(); }};
  }
  testing::SeedCnn* cnn = (models.cnn = std::make_unique<testing::SeedCnn>(gpu, 0, compute)).get();
  const auto [x, y] = testing::random_image_batch({w.batch, 28, 28, 1}, 1);
  const runtime::Buffer xb = device.to_device(x), yb = device.to_device(y);
  std::vector<runtime::Buffer> keys;
  for (int64_t s = 0; s < steps; ++s) keys.push_back(device.to_device(HostTensor::scalar<int64_t>(s)));
  return {[cnn, xb, yb, keys](int64_t s) { cnn->train_step_on_device({xb, yb, keys[static_cast<size_t>(s) % keys.size()]}); },
          [cnn] { return cnn->train_function().last_executable(); }};
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t warmup = std::max<int64_t>(1, bench::int_arg(argc, argv, "--warmup", 20));
  const int64_t steps = std::max<int64_t>(1, bench::int_arg(argc, argv, "--steps", 100));
  const double peak_tflops = bench::double_arg(argc, argv, "--peak-tflops", 0.0);
  const char* only = bench::arg_after(argc, argv, "--workload");
  std::vector<bench::Policy> w3_policies = bench::policies_from_args(argc, argv);
  if (w3_policies.empty()) w3_policies = {{"float32", DType::kF32}, {"mixed_bfloat16", DType::kBF16}};
  const char* device_arg = bench::arg_after(argc, argv, "--device");
  const std::string device = device_arg != nullptr ? device_arg : "cuda:0";

  // The GPU's model for the lines; no GPU is not a failure of the bench (see the top).
  std::string gpu_model = "none";
  if (device.rfind("cuda", 0) == 0) {
    const runtime::GpuSurvey survey = runtime::find_gpus();
    if (survey.gpus.empty()) {
      bench::JsonLine().add("bench", "train_step_gpu").add("error", "no CUDA device: " + survey.none_because).print();
      return 0;
    }
    for (const runtime::GpuInfo& g : survey.gpus)
      if (g.device == device) gpu_model = g.model;
  }
  const std::vector<Workload> workloads = {{"w1_seed_mlp", 128, {784, 128, 10}},
                                           {"w2_convnet", 128, {}},
                                           {"w3_wide_mlp", 512, {784, 1024, 1024, 10}}};
  std::shared_ptr<runtime::Backend> gpu;
  try {
    gpu = runtime::make_backend(device);
  } catch (const std::exception& e) {  // a GPU listed but not usable: a failure, said as a line
    bench::JsonLine().add("bench", "train_step_gpu").add("device", device).add("error", e.what()).print();
    return 1;
  }
  int status = 0;
  for (const Workload& w : workloads) {
    if (only != nullptr && w.name.rfind(only, 0) != 0) continue;
    const std::vector<bench::Policy> policies =
        w.name == "w3_wide_mlp" ? w3_policies : std::vector<bench::Policy>{{"float32", DType::kF32}};
    for (const bench::Policy& p : policies) {
      const std::string dtype = p.compute == DType::kBF16 ? "bf16" : "f32";  // the peer's names
      try {
        Models models;
        bench::PolicyStep s = make_step(w, p.compute, gpu, warmup + steps, models);
        bench::Stopwatch first;
        s.step(0);  // traces, compiles, runs once
        const double first_step_ms = first.seconds() * 1e3;
        for (int64_t i = 1; i < warmup; ++i) s.step(i);
        int64_t index = warmup;
        // One step per timed run: the median of single steps, as the peer's.
        const double ms = bench::median_ms_per_step(static_cast<int>(steps), 1, [] {}, [&](int64_t) { s.step(index++); });
        bench::JsonLine line;
        line.add("bench", "train_step_gpu")
            .add("workload", w.name)
            .add("dtype", dtype)
            .add("policy", p.name)
            .add("batch", w.batch)
            .add("first_step_ms", first_step_ms)
            .add("median_step_ms", ms)
            .add("samples_per_s", static_cast<double>(w.batch) / (ms / 1e3))
            .add("kernel_launches", static_cast<int64_t>(s.executable()->kernel_count()));
        if (!w.widths.empty()) {
          const double tflops = 3.0 * mlp_forward_flop(w.widths) * static_cast<double>(w.batch) / (ms / 1e3) / 1e12;
          line.add("matmul_tflops", tflops);
          if (peak_tflops > 0) line.add("fraction_of_peak", tflops / peak_tflops);
        }
        line.add("framework", "kiln").add("device", gpu->device().name()).add("gpu", gpu_model);
        line.print();
      } catch (const std::exception& e) {
        // Reported, not hidden: the other workloads still run and the exit status says it.
        bench::JsonLine().add("bench", "train_step_gpu").add("workload", w.name).add("dtype", dtype)
            .add("error", e.what()).print();
        status = 1;
      }
    }
  }
  return status;
}
