// bench/train_step_mlp: the seed MLP's whole train step (W1: batch 128, Adam) compiled by Kiln
// for the CPU. Prints JSON lines: compile_ms, ms_per_step (median of 5 runs of 200 steps),
// samples_per_s, gflop_per_s, kernel launches and peak RSS; the code generator against the
// interpreter; the Adam update against the machine's bandwidth. --compete also times the step
// with another CPU-bound process running (a busy machine; KILN_THREAD_GOVERNOR=0 shows it
// without the thread governor). With --peer it also runs
// ../shared/peers/pytorch W1 in the same run and prints the ratio. With --policy
// float32|mixed_bfloat16|both [--steps N] it prints only each policy's samples/s and planned
// bytes (bench/policy_compare.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "bench/adam_bandwidth.h"
#include "bench/bench_main.h"
#include "bench/policy_compare.h"
#include "kiln/core/debug_options.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/runtime/cpu/cpu_backend.h"
#include "kiln/runtime/cpu/loop_kernel.h"
#include "tests/testing/seed_mlp.h"

int main(int argc, char** argv) {
  using namespace kiln;
  const bool peer = argc > 1 && std::string(argv[1]) == "--peer";
  const bool compete = argc > 1 && std::string(argv[1]) == "--compete";
  const std::string peers = argc > 2 ? argv[2] : "../shared/peers";
  constexpr int64_t kBatch = 128, kStepsPerRun = 200, kRuns = 5;

  testing::MnistF32 data = testing::load_mnist_f32();
  testing::SeedMlp mlp(runtime::default_backend());
  std::vector<int32_t> perm(60000);
  std::iota(perm.begin(), perm.end(), 0);
  HostTensor xb(Shape(DType::kF32, {kBatch, 784})), yb(Shape(DType::kI32, {kBatch}));
  testing::gather_batch(data, perm, 0, xb, yb);
  if (const std::vector<bench::Policy> policies = bench::policies_from_args(argc, argv); !policies.empty()) {
    std::mt19937 rng(0);
    std::vector<std::unique_ptr<testing::SeedMlp>> models;
    bench::compare_policies("train_step_mlp", policies, kBatch, kRuns, bench::int_arg(argc, argv, "--steps", kStepsPerRun),
                            [&] { std::shuffle(perm.begin(), perm.end(), rng); }, [&](DType compute) {
      testing::SeedMlp* m = models.emplace_back(std::make_unique<testing::SeedMlp>(runtime::default_backend(), 0, compute)).get();
      return bench::PolicyStep{[&, m](int64_t s) {
                                 testing::gather_batch(data, perm, s * kBatch, xb, yb);
                                 m->train_step(xb, yb);
                               },
                               [m] { return m->train_function().last_executable(); }};
    });
    return 0;
  }

  bench::Stopwatch compile_watch;
  mlp.train_step(xb, yb);  // traces, compiles, runs once
  const double first_step_ms = compile_watch.seconds() * 1e3;
  const runtime::Executable* exe = mlp.train_function().last_executable();
  if (std::getenv("KILN_BENCH_DESCRIBE") != nullptr) std::fputs(exe->describe().c_str(), stderr);

  std::mt19937 rng(0);
  const double median_ms = bench::median_ms_per_step(
      kRuns, kStepsPerRun, [&] { std::shuffle(perm.begin(), perm.end(), rng); },
      [&](int64_t s) {
        testing::gather_batch(data, perm, s * kBatch, xb, yb);  // the peer times its gather too
        mlp.train_step(xb, yb);
      });
  const double samples_per_s = kBatch / (median_ms / 1e3);
  // Forward 2*B*(784*128 + 128*10); backward twice that (dX skipped for the first layer).
  const double flop = 2.0 * kBatch * (784 * 128 + 128 * 10) * 3.0 - 2.0 * kBatch * 784 * 128;
  bench::JsonLine line;
  line.add("bench", "train_step_mlp")
      .add("first_step_ms", first_step_ms)
      .add("compile_ms", first_step_ms - median_ms)  // trace + compile: the first step less a step
      .add("ms_per_step", median_ms)
      .add("samples_per_s", samples_per_s)
      .add("gflop_per_s", flop / (median_ms / 1e3) / 1e9)
      .add("kernel_launches", static_cast<int64_t>(exe->kernel_count()))
      .add("planned_peak_bytes", exe->planned_peak_bytes())
      .add("peak_rss_mb", bench::peak_rss_mb());
  line.print();

  // The code generator (with horizontal fusion, the default) against the step as the issue
  // found it: the interpreter (KILN_CODEGEN=0) with one kernel per loop fusion; and against the
  // interpreter with horizontal fusion (what generated code alone gives). Paired in one run.
  testing::SeedMlp baseline(cpu::make_cpu_backend(0, cpu::LoopEngine::kInterpreter, /*horizontal_fusion=*/false));
  testing::SeedMlp interpreted(cpu::make_cpu_backend(0, cpu::LoopEngine::kInterpreter));
  testing::SeedMlp generated(cpu::make_cpu_backend(0, cpu::LoopEngine::kGenerated));
  auto stepper = [&](testing::SeedMlp& m) {
    m.train_step(xb, yb);
    return [&](int64_t s) {
      testing::gather_batch(data, perm, s * kBatch, xb, yb);
      m.train_step(xb, yb);
    };
  };
  auto shuffle = [&] { std::shuffle(perm.begin(), perm.end(), rng); };
  auto [base_ms, gen_ms] = bench::paired_median_ms_per_step(kRuns, kStepsPerRun, shuffle, stepper(baseline), stepper(generated));
  auto [interp_ms, gen2_ms] =
      bench::paired_median_ms_per_step(kRuns, kStepsPerRun, shuffle, stepper(interpreted), stepper(generated));
  bench::JsonLine cg;
  cg.add("bench", "train_step_mlp.codegen")
      .add("interpreter_unfused_ms_per_step", base_ms)
      .add("codegen_ms_per_step", gen_ms)
      .add("codegen_speedup", base_ms / gen_ms)
      .add("target", 1.6)
      .add("interpreter_ms_per_step", interp_ms)
      .add("codegen_over_interpreter_same_lowering", interp_ms / gen2_ms);
  cg.print();
  bench::adam_vs_bandwidth(mlp.params(), kRuns).print();
  if (compete)  // the same steps with another CPU-bound process on the machine
    bench::compete_line("train_step_mlp", median_ms, [&] {
      return bench::median_ms_per_step(kRuns, kStepsPerRun, shuffle, stepper(mlp));
    }, [&] { return mlp.train_function().last_executable(); }).print();
  if (peer) {
    const double torch = bench::pytorch_peer(peers, "w1", "samples_per_s_epoch_2_to_E", "--epochs 2");
    bench::JsonLine p;
    p.add("bench", "train_step_mlp.peer").add("pytorch_w1_samples_per_s", torch)
        .add("kiln_over_pytorch", torch > 0 ? samples_per_s / torch : 0.0);
    p.print();
  }
  return 0;
}
