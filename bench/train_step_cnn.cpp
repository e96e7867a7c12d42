// bench/train_step_cnn: the Keras MNIST convnet's whole train step (W2: batch 128, dropout,
// Adam) compiled by Kiln for the CPU. Prints JSON lines: compile_ms, ms_per_step (median of 5
// runs), samples_per_s, gflop_per_s, kernel launches (and how many still run on the reference
// evaluator) and peak RSS. With --peer it also runs ../shared/peers/pytorch W2 in the same run
// and prints the ratio (the target is 1.5x PyTorch's samples_per_s_median_step). With --policy
// float32|mixed_bfloat16|both [--steps N] it prints only each policy's samples/s and planned
// bytes (bench/policy_compare.h). --compete also times the step with another CPU-bound process
// running (issue 19's busy machine).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/policy_compare.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/runtime/cpu/cpu_backend.h"
#include "kiln/runtime/cpu/loop_kernel.h"
#include "tests/testing/seed_cnn.h"

namespace {

int64_t count_of(const std::string& text, const std::string& what) {
  int64_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kiln;
  const bool peer = argc > 1 && std::string(argv[1]) == "--peer";
  const bool compete = argc > 1 && std::string(argv[1]) == "--compete";
  const std::string peers = argc > 2 ? argv[2] : "../shared/peers";
  constexpr int64_t kBatch = 128, kStepsPerRun = 40, kRuns = 5;

  testing::MnistF32 data = testing::load_mnist_f32();
  testing::SeedCnn cnn(runtime::default_backend());
  std::vector<int32_t> perm(60000);
  std::iota(perm.begin(), perm.end(), 0);
  HostTensor xb(Shape(DType::kF32, {kBatch, 28, 28, 1})), yb(Shape(DType::kI32, {kBatch}));
  testing::gather_batch(data, perm, 0, xb, yb);
  if (const std::vector<bench::Policy> policies = bench::policies_from_args(argc, argv); !policies.empty()) {
    std::mt19937 rng(0);
    std::vector<std::unique_ptr<testing::SeedCnn>> models;
    bench::compare_policies("train_step_cnn", policies, kBatch, kRuns, bench::int_arg(argc, argv, "--steps", kStepsPerRun),
                            [&] { std::shuffle(perm.begin(), perm.end(), rng); }, [&](DType compute) {
      testing::SeedCnn* m = models.emplace_back(std::make_unique<testing::SeedCnn>(runtime::default_backend(), 0, compute)).get();
      return bench::PolicyStep{[&, m](int64_t s) {
                                 testing::gather_batch(data, perm, s * kBatch, xb, yb);
                                 m->train_step(xb, yb, s);
                               },
                               [m] { return m->train_function().last_executable(); }};
    });
    return 0;
  }

  int64_t key = 0;
  bench::Stopwatch compile_watch;
  cnn.train_step(xb, yb, key++);  // traces, compiles, runs once
  const double first_step_ms = compile_watch.seconds() * 1e3;
  const runtime::Executable* exe = cnn.train_function().last_executable();
  const std::string steps = exe->describe();
  if (std::getenv("KILN_BENCH_DESCRIBE") != nullptr) std::fputs(steps.c_str(), stderr);
  for (int s = 0; s < 5; ++s) cnn.train_step(xb, yb, key++);  // warm caches and threads

  std::mt19937 rng(0);
  auto time_steps = [&] {
    return bench::median_ms_per_step(
        kRuns, kStepsPerRun, [&] { std::shuffle(perm.begin(), perm.end(), rng); },
        [&](int64_t s) {
          testing::gather_batch(data, perm, s * kBatch, xb, yb);  // the peer times its gather too
          cnn.train_step(xb, yb, key++);
        });
  };
  const double median_ms = time_steps();
  const double samples_per_s = kBatch / (median_ms / 1e3);
  // Forward MACs per image: conv1 26*26*32*9, conv2 11*11*64*288, dense 1600*10; the backward
  // is twice the forward except conv1's input gradient, which is not computed.
  const double conv1 = 26.0 * 26 * 32 * 9, conv2 = 11.0 * 11 * 64 * 288, dense = 1600.0 * 10;
  const double flop = 2.0 * kBatch * (3 * (conv1 + conv2 + dense) - conv1);
  bench::JsonLine line;
  line.add("bench", "train_step_cnn")
      .add("first_step_ms", first_step_ms)
      .add("compile_ms", first_step_ms - median_ms)  // trace + compile: the first step less a step
      .add("ms_per_step", median_ms)
      .add("samples_per_s", samples_per_s)
      .add("gflop_per_s", flop / (median_ms / 1e3) / 1e9)
      .add("kernel_launches", static_cast<int64_t>(exe->kernel_count()))
      .add("reference_kernels", count_of(steps, ": reference "))
      .add("planned_peak_bytes", exe->planned_peak_bytes())
      .add("peak_rss_mb", bench::peak_rss_mb());
  line.print();

  // The code generator (with horizontal fusion, the default) against the step as issue 18
  // found it: the interpreter (KILN_CODEGEN=0) with one kernel per loop fusion. Paired.
  testing::SeedCnn baseline(cpu::make_cpu_backend(0, cpu::LoopEngine::kInterpreter, /*horizontal_fusion=*/false));
  testing::SeedCnn generated(cpu::make_cpu_backend(0, cpu::LoopEngine::kGenerated));
  baseline.train_step(xb, yb, key);
  generated.train_step(xb, yb, key);
  auto [base_ms, gen_ms] = bench::paired_median_ms_per_step(
      kRuns, kStepsPerRun / 2, [&] { std::shuffle(perm.begin(), perm.end(), rng); },
      [&](int64_t s) {
        testing::gather_batch(data, perm, s * kBatch, xb, yb);
        baseline.train_step(xb, yb, key + s);
      },
      [&](int64_t s) {
        testing::gather_batch(data, perm, s * kBatch, xb, yb);
        generated.train_step(xb, yb, key + s);
      });
  bench::JsonLine cg;
  cg.add("bench", "train_step_cnn.codegen")
      .add("interpreter_unfused_ms_per_step", base_ms)
      .add("codegen_ms_per_step", gen_ms)
      .add("codegen_speedup", base_ms / gen_ms);
  cg.print();
  if (compete)
    bench::compete_line("train_step_cnn", median_ms, time_steps, [&] { return cnn.train_function().last_executable(); }).print();
  if (peer) {
    const double torch = bench::pytorch_peer(peers, "w2", "samples_per_s_median_step");
    bench::JsonLine p;
    p.add("bench", "train_step_cnn.peer").add("pytorch_w2_samples_per_s", torch)
        .add("kiln_over_pytorch", torch > 0 ? samples_per_s / torch : 0.0).add("target", 1.5);
    p.print();
  }
  return 0;
}
