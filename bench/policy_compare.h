// `--policy float32|mixed_bfloat16|both` for the train-step benches: each policy's step is
// built, timed (median of runs) and reported with its planned peak and activation bytes and
// the CPU's bf16 support (oneDNN's bf16 matmul ISA, or "none": then bf16 saves memory only);
// with both, one more line gives mixed_bfloat16 over float32 measured in the same run (runs
// alternated) and the machine's 1-minute load average.
//
// The mixed_bfloat16 steps are written with explicit casts (tests/testing/compute_cast.h,
// what a Keras mixed_bfloat16 layer does) until the Keras Policy exists; a bench's `make`
// callback is the one place to switch to it.
#pragma once

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "kiln/core/check.h"
#include "kiln/core/dtype.h"
#include "kiln/runtime/cpu/onednn_matmul.h"
#include "kiln/runtime/executable.h"

namespace kiln::bench {

struct Policy {
  std::string name;  // Keras's policy name
  DType compute;
};

/// The argument after `flag`, or null when `flag` is absent.
inline const char* arg_after(int argc, char** argv, const std::string& flag) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == flag) return argv[i + 1];
  return nullptr;
}

/// The policies `--policy` names (empty when it is absent).
inline std::vector<Policy> policies_from_args(int argc, char** argv) {
  const char* arg = arg_after(argc, argv, "--policy");
  if (arg == nullptr) return {};
  const std::string p = arg;
  if (p == "float32") return {{"float32", DType::kF32}};
  if (p == "mixed_bfloat16") return {{"mixed_bfloat16", DType::kBF16}};
  if (p == "both") return {{"float32", DType::kF32}, {"mixed_bfloat16", DType::kBF16}};
  KILN_THROW(ValueError, "[--policy] unknown policy '", p, "'; expected float32, mixed_bfloat16 or both.");
}

/// The integer after `flag`, or `fallback`.
inline int64_t int_arg(int argc, char** argv, const std::string& flag, int64_t fallback) {
  const char* v = arg_after(argc, argv, flag);
  return v != nullptr ? std::atoll(v) : fallback;
}

/// The number after `flag`, or `fallback`.
inline double double_arg(int argc, char** argv, const std::string& flag, double fallback) {
  const char* v = arg_after(argc, argv, flag);
  return v != nullptr ? std::atof(v) : fallback;
}

/// One policy's compiled step: `step(s)` runs step s; `executable` after the first step.
struct PolicyStep {
  std::function<void(int64_t)> step;
  std::function<const runtime::Executable*()> executable;
};

/// Builds each policy's step with `make(compute_dtype)`, runs it once (trace + compile), then
/// times `runs` runs of `steps` steps (`before_run` untimed before each) and prints the lines.
/// With two policies their runs alternate (A B B A ...), so a change in the machine's load
/// falls on both alike.
template <typename Make, typename BeforeRun>
void compare_policies(const std::string& bench, const std::vector<Policy>& policies, int64_t batch, int runs,
                      int64_t steps, BeforeRun before_run, Make make) {
  const std::string isa = cpu::native_matmul_isa(DType::kBF16);
  const std::string bf16 = isa.empty() ? "none: oneDNN has no bf16 matmul on this CPU (mixed_bfloat16 saves memory only)" : isa;
  struct Figures {
    double samples_per_s = 0;
    int64_t peak = 0, activations = 0;
  };
  std::vector<PolicyStep> made;
  std::vector<double> first_ms;
  for (const Policy& p : policies) {
    PolicyStep& s = made.emplace_back(make(p.compute));
    Stopwatch compile_watch;
    s.step(0);
    first_ms.push_back(compile_watch.seconds() * 1e3);
  }
  std::vector<double> ms;
  if (made.size() == 2) {
    auto [a, b] = paired_median_ms_per_step(runs, steps, before_run, made[0].step, made[1].step);
    ms = {a, b};
  } else {
    for (PolicyStep& s : made) ms.push_back(median_ms_per_step(runs, steps, before_run, s.step));
  }
  std::vector<Figures> figures;
  for (size_t i = 0; i < policies.size(); ++i) {
    const Policy& p = policies[i];
    const runtime::Executable* exe = made[i].executable();
    Figures f{static_cast<double>(batch) / (ms[i] / 1e3), exe->planned_peak_bytes(), exe->planned_activation_bytes()};
    figures.push_back(f);
    JsonLine line;
    line.add("bench", bench + ".policy")
        .add("policy", p.name)
        .add("first_step_ms", first_ms[i])
        .add("ms_per_step", ms[i])
        .add("samples_per_s", f.samples_per_s)
        .add("planned_peak_bytes", f.peak)
        .add("planned_activation_bytes", f.activations)
        .add("kernel_launches", static_cast<int64_t>(exe->kernel_count()))
        .add("onednn_bf16_isa", bf16);
    line.print();
  }
  if (figures.size() == 2) {
    JsonLine ratio;
    ratio.add("bench", bench + ".mixed_bfloat16_over_float32")
        .add("samples_per_s_ratio", figures[1].samples_per_s / figures[0].samples_per_s)
        .add("activation_bytes_ratio", static_cast<double>(figures[1].activations) / static_cast<double>(figures[0].activations))
        .add("peak_bytes_ratio", static_cast<double>(figures[1].peak) / static_cast<double>(figures[0].peak))
        .add("onednn_bf16_isa", bf16);
    double load[1] = {-1};
    if (getloadavg(load, 1) == 1) ratio.add("load_avg_1m", load[0]);  // the machine's other work
    ratio.print();
  }
}

}  // namespace kiln::bench
