// DebugOptions: every KILN_* environment knob, read once in from_env() and passed down
// explicitly (docs/env_vars.md lists them). Nothing else in Kiln reads the environment for
// behaviour, except the data-folder lookup of datasets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct DebugOptions {
  /// KILN_DUMP_IR=<dir>: write the IR after every pass (and the lowered program) there.
  std::string dump_ir_dir;
  /// KILN_DISABLE_PASSES=cse,dce: passes the pipeline skips, by name().
  std::vector<std::string> disabled_passes;
  /// KILN_VERIFY_IR=0|1: run the IR verifier between passes (default 1).
  bool verify_ir = true;
  /// KILN_CPU_MEMORY_LIMIT=<bytes, or with K/M/G suffix>: the CPU device's memory; 0 means
  /// physical RAM (the default).
  int64_t cpu_memory_limit = 0;
  /// KILN_LOG=0..3: 0 errors only, 1 warnings (default), 2 info (compile times), 3 debug.
  int log_level = 1;
  /// KILN_NO_MEMORY_PLANNER=1: give every buffer its own slot (debugging aid).
  bool no_memory_planner = false;
  /// KILN_PROFILE=1: time every step of every executable and print a table when it is
  /// destroyed (what each kernel costs per run).
  bool profile = false;
  /// KILN_PROFILE=<file>.json: record each Model::fit (compile passes, kernels per thread,
  /// input-pipeline stages, input waits) as a Chrome trace into that file, and print the
  /// slowest kernels when fit ends.
  std::string profile_trace;
  /// KILN_CPU_DEVICES=<n>: split the host into n logical CPU devices (each with its share of
  /// the threads) so a MirroredStrategy can run n replicas; 0 or unset means one device.
  int cpu_devices = 0;
  /// KILN_DEVICE=cpu|guarded_cpu: the CPU backend's device. guarded_cpu keeps buffers in an
  /// arena that host code cannot read (runtime/host_device.h), to test that every path copies
  /// device memory where a GPU would need it; a test setting, slower than cpu (the default).
  std::string device = "cpu";
  /// KILN_CODEGEN=0|1: compile fused loops to machine code with LLVM (default 1); 0 runs the
  /// register interpreter, the reference fallback.
  bool codegen = true;
  /// KILN_THREAD_GOVERNOR=0|1: let each CPU executable run on fewer threads while another
  /// process slows its full team (runtime/cpu/thread_governor.h; default 1).
  bool thread_governor = true;
  /// KILN_CACHE_DIR=<dir>: where generated kernels are cached on disk (default
  /// $HOME/.cache/kiln/kernels; "off", or no HOME, disables the disk cache).
  std::string kernel_cache_dir;
  /// KILN_16BIT_CONTRACTIONS=auto|native|f32: how the CPU runs a bf16/f16 matmul. auto (the
  /// default) times oneDNN's 16-bit kernel against f32 compute from the 16-bit storage once
  /// per shape at compile time and keeps the faster (cached beside the generated kernels);
  /// native and f32 force one (f32 also where oneDNN has no 16-bit kernel); f32 also runs
  /// 16-bit convolutions and pooling in f32 (widened a batch tile at a time).
  std::string sixteen_bit_contractions = "auto";
  /// KILN_BATCH_INVARIANT=0|1: compile every program batch-invariant (1: each matmul and
  /// convolution sums in an order that does not depend on the batch) or none (0). Unset, each
  /// program keeps its own default (FunctionOptions::batch_invariant; PredictOptions::batch_invariant).
  std::optional<bool> batch_invariant;
  /// KILN_UNLISTED_FALLBACKS=0|1: 1 runs an op that no CPU kernel takes and that
  /// runtime/cpu/reference_fallbacks.cpp does not list on the reference evaluator, with a
  /// warning; 0 (the default) refuses it with a CompileError naming it.
  bool unlisted_fallbacks = false;

  /// Reads the variables above; throws ConfigError naming a variable with a bad value.
  static DebugOptions from_env();
  /// from_env() evaluated once per process (the environment is read once, per docs/style.md 2.7).
  static const DebugOptions& global();
};

/// Parses "1024", "64K", "512M", "2G" into bytes; throws ConfigError naming `what`.
int64_t parse_byte_size(const std::string& text, const std::string& what);

}  // namespace kiln
