// CpuBackend: legality, the default pass pipeline, memory planning with the device-limit check
// (seed S25), and lowering.
#include "kiln/runtime/cpu/cpu_backend.h"


#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include "kiln/compiler/default_pipeline.h"
#include "kiln/compiler/memory_plan.h"
#include "kiln/core/check.h"
#include "kiln/core/trace_recorder.h"
#include "kiln/core/logging.h"
#include "kiln/runtime/cpu/cpu_executable.h"
#include "kiln/runtime/host_device.h"
#include "kiln/runtime/cpu/lowering.h"
#include "kiln/runtime/cpu/loop_kernel.h"
#include "kiln/runtime/cpu/cpu_warmup.h"
#include "kiln/compiler/ir_dump.h"
#include "kiln/ir/clone.h"

namespace kiln::cpu {
namespace {

std::string mib(int64_t bytes) { return str_cat(bytes / (1 << 20), " MiB"); }

// One plan's estimate (compiler::largest_fitting_batch bisects over real plans, but needs a
// re-trace per batch size, which only the trace layer can do). Peak is close to affine in the batch: activations (the arena) and batch-sized arguments and
// outputs grow with it; weights, optimizer state and constants do not. The batch is dim 0 of
// the first parameter (function inputs come before captured variables).
int64_t estimate_largest_batch(const ir::Module& m, const compiler::MemoryPlan& plan, int64_t limit) {
  const ir::Computation& entry = *m.entry();
  if (entry.parameters().empty() || entry.parameters()[0]->shape().rank() == 0) return 0;
  const int64_t batch = entry.parameters()[0]->shape().dims()[0];
  if (batch <= 0) return 0;
  int64_t scaled = plan.arena_bytes;
  for (const ir::Instruction* p : entry.parameters())
    if (p->shape().rank() > 0 && p->shape().dims()[0] == batch) scaled += p->shape().byte_size();
  for (const ir::Instruction* o : entry.outputs())
    if (o->shape().rank() > 0 && o->shape().dims()[0] == batch) scaled += o->shape().byte_size();
  const int64_t fixed = plan.peak_bytes() - scaled;
  const int64_t per_sample = std::max<int64_t>(1, scaled / batch);
  return limit <= fixed ? 0 : (limit - fixed) / per_sample;
}

class CpuBackend : public runtime::Backend {
 public:
  CpuBackend(int64_t limit, LoopEngine engine, bool horizontal_fusion)
      : target_("cpu", limit), engine_(engine), horizontal_fusion_(horizontal_fusion),
        device_(DebugOptions::global().device == "guarded_cpu" ? runtime::guarded_device() : runtime::host_device()) {}
  std::string name() const override { return "cpu"; }
  runtime::Device& device() override { return device_; }
  const compiler::TargetInfo& target_info() const override { return target_; }
  std::map<std::string, int64_t> reference_fallback_counts() const override {
    std::lock_guard<std::mutex> lock(fallbacks_mutex_);
    return fallbacks_;
  }

  bool has_batch_invariant_kernels() const override { return true; }
  std::unique_ptr<runtime::Executable> compile(std::unique_ptr<ir::Module> module,
                                               const runtime::CompileOptions& options) override {
    const std::string label = options.label.empty() ? module->name() : options.label;
    TraceScope compile_scope("compile", "compile", label);
    compiler::check_and_optimize(*module, target_, options.debug, options.label);
    compiler::MemoryPlan plan = [&] {
      TraceScope scope("compile", "memory-planning", label);
      return compiler::plan_memory(*module, target_, !options.debug.no_memory_planner);
    }();
    check_fits(*module, plan, 0, label);
    auto exe = std::make_unique<CpuExecutable>(std::move(module), std::move(plan), options.debug.profile,
                                                options.debug.thread_governor);
    exe->set_collectives(options.collectives, options.replica_id);
    const std::vector<std::string>& disabled = options.debug.disabled_passes;
    {
      TraceScope scope("compile", "lowering", label);
      // A while body or branch is a program of its own, compiled (passes, plan, lowering) here.
      CompileNested compile_nested = [this, &options, &label](const ir::Computation& c,
                                                              const std::vector<size_t>* outputs,
                                                              const std::vector<ir::OutputAlias>& aliases,
                                                              const std::string& name) {
        std::unique_ptr<ir::Module> nested = ir::extract_module(c, str_cat(label, ".", name));
        if (outputs != nullptr) {
          std::vector<ir::Instruction*> kept;
          for (size_t i : *outputs) kept.push_back(nested->entry()->outputs().at(i));
          nested->entry()->set_outputs(std::move(kept));
        }
        for (const ir::OutputAlias& a : aliases) nested->add_alias(a);
        runtime::CompileOptions nested_options = options;
        nested_options.label = nested->name();
        nested_options.debug.thread_governor = false;  // the enclosing step's governor decides
        return compile(std::move(nested), nested_options);
      };
      const LoweringOptions lowering{
          .engine = engine_,
          .horizontal_fusion = horizontal_fusion_ &&
                               std::find(disabled.begin(), disabled.end(), "horizontal-fusion") == disabled.end(),
          .matmul = MatmulOptions::from(options.debug.sixteen_bit_contractions, options.debug.kernel_cache_dir,
                                        options.debug.batch_invariant.value_or(options.batch_invariant)),
          .unlisted_fallbacks = options.debug.unlisted_fallbacks};
      lower(*exe, lowering, compile_nested);
    }
    check_fits(exe->module(), exe->plan(), exe->nested_bytes(), label);  // the nested programs are known now
    note_fallbacks(*exe);
    if (!options.debug.dump_ir_dir.empty())
      compiler::dump_text(options.debug.dump_ir_dir, str_cat(options.label.empty() ? exe->module().name() : options.label,
                                                            ".lowered.txt"), exe->describe());
    return exe;
  }

 private:
  // Throws OutOfMemoryError when the step's plan, with `nested` bytes of while/conditional
  // programs and buffers beside it, does not fit the device.
  void check_fits(const ir::Module& module, const compiler::MemoryPlan& plan, int64_t nested,
                  const std::string& label) const {
    const int64_t limit = target_.memory_limit_bytes();
    const int64_t peak = plan.peak_bytes() + nested;
    if (peak <= limit) return;
    const int64_t fits = estimate_largest_batch(module, plan, limit - nested);
    // What a 16-bit compute dtype would save: the arena re-planned with f32 values at 2
    // bytes (the step's f32 activations are what a mixed_bfloat16 policy halves).
    const int64_t saved = plan.arena_bytes - compiler::arena_bytes_with_16bit_values(module, target_);
    const std::string policy_hint =
        saved > 0 ? str_cat("; or train under the mixed_bfloat16 policy (keras::mixed_precision::set_global_policy(",
                            "\"mixed_bfloat16\")), which would save about ", mib(saved), " of activations in this step")
                  : "";
    KILN_THROW(OutOfMemoryError, "[", label, "] the step needs ", peak, " bytes (", mib(peak),
               ": activations ", mib(plan.arena_bytes), ", arguments ", mib(plan.argument_bytes),
               ", outputs ", mib(plan.output_bytes),
               nested > 0 ? str_cat(", loops' and branches' programs and buffers ", mib(nested)) : std::string(),
               ") but the cpu device has ", limit, " bytes (",
               mib(limit), "). Hint: the largest batch size that fits is about ", fits, policy_hint,
               "; or raise KILN_CPU_MEMORY_LIMIT if the machine has more memory.");
  }

  // Counts the steps `exe` runs on the reference evaluator and warns the first time this
  // backend falls back on an op: such a step is correct but can be orders of magnitude slower.
  void note_fallbacks(const CpuExecutable& exe) {
    std::lock_guard<std::mutex> lock(fallbacks_mutex_);
    for (const ReferenceFallback& f : exe.reference_fallback_steps()) {
      if (fallbacks_[f.op]++ > 0) continue;
      log(LogLevel::kWarning,
          str_cat("[cpu] no fast kernel for ", f.op, ": ", f.instruction,
                  " runs on the reference evaluator (correct, but slow)",
                  f.reason.empty() ? std::string("; runtime/cpu/reference_fallbacks.cpp does not list it (KILN_UNLISTED_FALLBACKS=1)")
                                   : str_cat(" for ", f.reason),
                  ". Further ", f.op, " fallbacks are not reported; KILN_LOG=3 lists each."));
    }
  }

  compiler::AcceptAllTarget target_;  // every op runs: without a fast kernel, on the reference one
  LoopEngine engine_;
  bool horizontal_fusion_;
  runtime::Device& device_;
  mutable std::mutex fallbacks_mutex_;  // compile() may run on several replicas' threads
  std::map<std::string, int64_t> fallbacks_;
  CpuWarmup warmup_{engine_ == LoopEngine::kGenerated};  // while the first step compiles
};

}  // namespace

std::unique_ptr<runtime::Backend> make_cpu_backend(int64_t memory_limit, std::optional<LoopEngine> engine,
                                                   bool horizontal_fusion) {
  if (memory_limit <= 0) memory_limit = DebugOptions::global().cpu_memory_limit;
  if (memory_limit <= 0) memory_limit = runtime::host_memory_bytes();
  return std::make_unique<CpuBackend>(memory_limit, engine.value_or(default_loop_engine()), horizontal_fusion);
}

}  // namespace kiln::cpu
