// CpuExecutable: a lowered step: one arena, a flat list of Steps (kernel calls), and the
// value table that tells each step where its operands live during a run.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/compiler/memory_plan.h"
#include "kiln/core/host_tensor.h"
#include "kiln/core/trace_recorder.h"
#include "kiln/ir/module.h"
#include "kiln/runtime/collectives.h"
#include "kiln/runtime/cpu/thread_governor.h"
#include "kiln/runtime/executable.h"

namespace kiln::cpu {

/// One kernel call. `reads`/`writes` are value ids (indices into the value table), so the
/// executor can check aliasing and a later scheduler can overlap independent steps.
struct Step {
  std::string label;   // "fusion(loop)", "matmul+bias+relu", ... for dumps and errors
  std::string source;  // layer or call site of the instruction it came from
  std::vector<int> reads;
  std::vector<int> writes;
  std::function<void(void* const* values)> run;
  /// When set, the step can also run as team work (team_impl.h) inside a team shared with its
  /// neighbours; `work` (elements) sizes that team.
  std::function<void(void* const* values)> team;
  int64_t work = 0;
  /// Floating-point operations of one run (matmuls and convolutions; 0 when not counted), for
  /// the profiler's GFLOP/s.
  int64_t flops = 0;
};

/// A step lowered to the reference evaluator: its op key (Executable::reference_fallbacks),
/// the instruction it runs, described for the warning, and the reason of the rule that lists
/// it (reference_fallbacks.h; empty for an unlisted one run under KILN_UNLISTED_FALLBACKS=1).
struct ReferenceFallback {
  std::string op;
  std::string instruction;
  std::string_view reason;
};

class CpuExecutable : public runtime::Executable {
 public:
  CpuExecutable(std::unique_ptr<ir::Module> module, compiler::MemoryPlan plan, bool profile = false,
                bool thread_governor = false);
  ~CpuExecutable() override;

  std::vector<HostTensor> run(std::span<HostTensor> arguments) override { return run_into(arguments, {}); }
  std::vector<HostTensor> run_into(std::span<HostTensor> arguments, std::span<HostTensor> outputs) override;
  int64_t planned_peak_bytes() const override { return plan_.peak_bytes() + nested_bytes_; }
  int64_t planned_activation_bytes() const override { return plan_.arena_bytes + nested_activation_bytes_; }
  int kernel_count() const override { return static_cast<int>(steps_.size()); }
  std::string describe() const override;
  std::vector<std::string> reference_fallbacks() const override;
  const ir::Module* lowered_module() const override { return module_.get(); }
  int last_run_threads() const override { return last_run_threads_; }

  // Lowering fills these.
  int value_id(const ir::Instruction* inst) const;
  void add_step(Step step) { steps_.push_back(std::move(step)); }
  /// Bytes a while or conditional step holds beside the plan (they live as long as this
  /// executable): `bytes` in all, `activations` of them its nested programs' arenas.
  void add_nested_bytes(int64_t bytes, int64_t activations) {
    nested_bytes_ += bytes;
    nested_activation_bytes_ += activations;
  }
  int64_t nested_bytes() const { return nested_bytes_; }
  /// Lowering notes each step it gives to the reference evaluator.
  void add_reference_fallback(ReferenceFallback fallback) { fallbacks_.push_back(std::move(fallback)); }
  const std::vector<ReferenceFallback>& reference_fallback_steps() const { return fallbacks_; }
  /// Merges each run of consecutive team-capable steps into one step (one launch).
  void group_team_steps();
  ir::Module& scratch_module() { return *scratch_; }
  /// The replicas all_reduce steps meet (null: one replica) and this program's replica id.
  void set_collectives(std::shared_ptr<runtime::Collectives> collectives, int replica_id) {
    collectives_ = std::move(collectives);
    replica_id_ = replica_id;
  }
  const std::shared_ptr<runtime::Collectives>& collectives() const { return collectives_; }
  int replica_id() const { return replica_id_; }
  const ir::Module& module() const { return *module_; }
  const compiler::MemoryPlan& plan() const { return plan_; }

 private:
  std::unique_ptr<ir::Module> module_;
  std::unique_ptr<ir::Module> scratch_;  // one-op bodies built for unfused instructions
  compiler::MemoryPlan plan_;
  int64_t nested_bytes_ = 0, nested_activation_bytes_ = 0;
  std::unordered_map<const ir::Instruction*, int> ids_;
  std::vector<Step> steps_;
  std::vector<ReferenceFallback> fallbacks_;
  std::shared_ptr<runtime::Collectives> collectives_;
  int replica_id_ = 0;
  HostTensor arena_;
  std::vector<void*> values_;  // per run: where each value lives
  // KILN_PROFILE: nanoseconds spent in each step over all runs.
  bool profile_ = false;
  // Made at the first run, for the thread share of the thread that runs it.
  bool thread_governor_ = false;
  std::optional<ThreadGovernor> governor_;
  std::optional<std::chrono::steady_clock::time_point> last_start_;
  int last_run_threads_ = 0;
  int64_t runs_ = 0;
  std::vector<int64_t> step_ns_;
  std::vector<int64_t> step_bytes_;  // bytes each step reads and writes (for a TraceSession)
  void run_traced(TraceRecorder& recorder);
};

}  // namespace kiln::cpu
