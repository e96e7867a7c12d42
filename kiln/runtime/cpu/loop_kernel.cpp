// Loop kernels: a LoopIr (compiler/codegen/loop_ir.h) run by generated code (CpuJit) or by the
// interpreter, chunk by chunk. The interpreter's executor (loop_kernel_exec.inc) is compiled
// for the build's baseline and for x86-64-v4; each kernel runs the variant its CPU supports.
#include "kiln/runtime/cpu/loop_kernel.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "kiln/compiler/codegen/loop_ir.h"
#include "kiln/core/check.h"
#include "kiln/core/debug_options.h"
#include "kiln/core/dtype_dispatch.h"
#include "kiln/core/float_math.h"
#include "kiln/ir/instruction.h"
#include "kiln/runtime/cpu/cpu_isa_impl.h"
#include "kiln/runtime/cpu/cpu_jit.h"
#include "kiln/runtime/cpu/team_impl.h"

namespace kiln::cpu {
namespace {

constexpr int64_t kChunk = 256;              // elements per register: 1 KiB of f32

// The executor (loop_kernel_exec.inc) names the LoopIr's parts briefly.
using Stage = codegen::LoopStage;
using Load = codegen::LoopLoad;
using Instr = codegen::LoopInstr;
using Op = codegen::LoopOp;

// The executor's entry points in one ISA variant (loop_kernel_exec.inc, cpu_isa_impl.h).
struct LoopKernels {
  void (*eval_f32)(const Stage&, const void* const* srcs, int64_t base, int64_t n, float* regs);
  void (*eval_f64)(const Stage&, const void* const* srcs, int64_t base, int64_t n, double* regs);
  void (*store_f32)(DType, void* out, int64_t base, int64_t n, const float* src);
  void (*store_f64)(DType, void* out, int64_t base, int64_t n, const double* src);
};

}  // namespace

// A LoopIr with what runs it: the interpreter's ISA variant and, once compiled, generated code.
class LoopProgram : public codegen::LoopIr {
 public:
  explicit LoopProgram(codegen::LoopIr loop_ir) : codegen::LoopIr(std::move(loop_ir)) {}
  const LoopKernels* kernels = nullptr;  // the variant for this CPU, chosen at creation
  std::shared_ptr<const JitLoopFunctions> jit;  // the generated code, when KILN_CODEGEN is on

  template <typename T>
  void eval_chunk(const Stage& st, const void* const* srcs, int64_t base, int64_t n, T* regs) const;
  template <typename T>
  void stage_work(const Stage& st, const void* const* srcs, void* const* outs) const;
  void jit_stage_work(size_t s, const void* const* srcs, void* const* outs) const;
  void work(size_t s, const void* const* srcs, void* const* outs) const;
  void prepare_team(const void* const* inputs, LoopRun& run) const;
  void run_team(const void* const* inputs, void* const* outs, LoopRun& run) const;
  template <typename T, typename R>
  void read(const LoopRun& run, int64_t base, int64_t n, T* dst, std::vector<R>& regs) const;
};

// The executor, compiled once per ISA variant; the dispatch is per chunk (256 elements).
namespace {
#define KILN_ISA_BODY "kiln/runtime/cpu/loop_kernel_exec.inc"
#include "kiln/runtime/cpu/cpu_isa_variants.inc"

}  // namespace

template <typename T>
void LoopProgram::eval_chunk(const Stage& st, const void* const* srcs, int64_t base, int64_t n, T* regs) const {
  if constexpr (std::is_same_v<T, float>) kernels->eval_f32(st, srcs, base, n, regs);
  else kernels->eval_f64(st, srcs, base, n, regs);
}

// Team work: every thread calls it; chunks are shared out by the orphaned `omp for`.
// A chunk's loads all happen before its stores, so an output may share an input's buffer when
// both walk the same elements (in-place updates, horizontally fused outputs).
template <typename T>
void LoopProgram::stage_work(const Stage& st, const void* const* srcs, void* const* outs) const {
  const int64_t total = st.shape.num_elements();
  const int64_t chunks = (total + kChunk - 1) / kChunk;
  std::vector<T> regs(static_cast<size_t>(std::max(st.num_registers, 1)) * kChunk);
#pragma omp for schedule(static)
  for (int64_t ci = 0; ci < chunks; ++ci) {
    const int64_t base = ci * kChunk;
    const int64_t n = std::min(kChunk, total - base);
    eval_chunk<T>(st, srcs, base, n, regs.data());
    for (size_t k = 0; k < st.results.size(); ++k) {
      const T* value = regs.data() + st.results[k].reg * kChunk;
      if constexpr (std::is_same_v<T, float>) kernels->store_f32(st.results[k].dtype, outs[k], base, n, value);
      else kernels->store_f64(st.results[k].dtype, outs[k], base, n, value);
    }
  }
}

// Team work: each thread runs the generated function once over its share of the elements.
void LoopProgram::jit_stage_work(size_t s, const void* const* srcs, void* const* outs) const {
  const int64_t total = stages[s].shape.num_elements();
  const int64_t parts = omp_get_num_threads();
#pragma omp for schedule(static)
  for (int64_t p = 0; p < parts; ++p) {
    // Shares start on 16-element boundaries, so two threads rarely write one cache line.
    auto bound = [&](int64_t q) { return q == parts ? total : std::min(total, (total * q / parts + 15) & ~int64_t{15}); };
    if (bound(p) < bound(p + 1)) jit->stages[s](srcs, outs, bound(p), bound(p + 1));
  }
}

void LoopProgram::work(size_t s, const void* const* srcs, void* const* outs) const {
  if (jit != nullptr && s < jit->stages.size()) jit_stage_work(s, srcs, outs);
  else if (use_double) stage_work<double>(stages[s], srcs, outs);
  else stage_work<float>(stages[s], srcs, outs);
}

void LoopProgram::prepare_team(const void* const* inputs, LoopRun& run) const {
#pragma omp single
  {  // one thread lays out where every load reads; the inner stages' values are allocated
     // on the first run and reused (every element is written before it is read)
    if (run.scratch.size() != stages.size()) {
      run.scratch.assign(stages.size(), HostTensor());
      for (size_t s = 0; s + 1 < stages.size(); ++s) run.scratch[s] = HostTensor::uninitialized(stages[s].shape);
    }
    run.srcs.resize(stages.size());
    for (size_t s = 0; s < stages.size(); ++s) {
      run.srcs[s].clear();
      for (const Load& l : stages[s].loads) {
        switch (l.kind) {
          case Load::kParameter: run.srcs[s].push_back(inputs[l.index]); break;
          case Load::kStage: run.srcs[s].push_back(run.scratch[static_cast<size_t>(l.index)].raw_data()); break;
          case Load::kLiteral: run.srcs[s].push_back(literals[static_cast<size_t>(l.index)].raw_data()); break;
        }
      }
    }
  }
  for (size_t s = 0; s + 1 < stages.size(); ++s) {  // inner stages: values broadcasts read
    void* out = run.scratch[s].raw_data();
    work(s, run.srcs[s].data(), &out);
  }
}

void LoopProgram::run_team(const void* const* inputs, void* const* outs, LoopRun& run) const {
  prepare_team(inputs, run);
  work(stages.size() - 1, run.srcs.back().data(), outs);
}

template <typename T, typename R>
void LoopProgram::read(const LoopRun& run, int64_t base, int64_t n, T* dst, std::vector<R>& regs) const {
  if constexpr (std::is_same_v<T, R>) {
    if (jit != nullptr && jit->read != nullptr) {
      jit->read(run.srcs.back().data(), dst, base, base + n);
      return;
    }
  }
  const Stage& st = stages.back();
  regs.resize(static_cast<size_t>(std::max(st.num_registers, 1)) * kChunk);
  for (int64_t done = 0; done < n; done += kChunk) {
    const int64_t len = std::min(kChunk, n - done);
    eval_chunk<R>(st, run.srcs.back().data(), base + done, len, regs.data());
    const R* result = regs.data() + st.results[0].reg * kChunk;
    for (int64_t j = 0; j < len; ++j) dst[done + j] = static_cast<T>(result[j]);
  }
}

LoopKernel::LoopKernel(std::unique_ptr<LoopProgram> program) : program_(std::move(program)) {}
LoopKernel::~LoopKernel() = default;

LoopEngine default_loop_engine() {
  return DebugOptions::global().codegen ? LoopEngine::kGenerated : LoopEngine::kInterpreter;
}

std::unique_ptr<LoopKernel> LoopKernel::create(const ir::Computation& body, LoopEngine engine, LoopJitBatch* batch) {
  return create_for(std::vector<const ir::Instruction*>(body.outputs().begin(), body.outputs().end()), engine, batch,
                    false);
}

std::unique_ptr<LoopKernel> LoopKernel::create_streaming(const ir::Instruction& root, LoopEngine engine,
                                                         LoopJitBatch* batch) {
  return create_for({&root}, engine, batch, true);
}

void LoopJitBatch::add(LoopProgram* program, bool read) { programs_.emplace_back(program, read); }

void LoopJitBatch::compile() {
  CpuJit* jit = CpuJit::instance();
  if (jit == nullptr || programs_.empty()) return;
  std::vector<JitRequest> requests;
  for (const auto& [program, read] : programs_) requests.push_back({program, read, nullptr});
  jit->compile(requests);
  for (size_t i = 0; i < programs_.size(); ++i) programs_[i].first->jit = requests[i].functions;
  programs_.clear();
}

bool LoopKernel::generated() const { return program_->jit != nullptr; }

std::unique_ptr<LoopKernel> LoopKernel::create_for(const std::vector<const ir::Instruction*>& roots,
                                                   LoopEngine engine, LoopJitBatch* batch, bool read) {
  std::optional<codegen::LoopIr> loop_ir = codegen::LoopIr::build(roots);
  if (!loop_ir) return nullptr;
  auto program = std::make_unique<LoopProgram>(std::move(*loop_ir));
  program->kernels = KILN_ISA_SELECT(kKernels);
  if (engine == LoopEngine::kGenerated) {
    LoopJitBatch own;
    (batch != nullptr ? batch : &own)->add(program.get(), read);
    own.compile();
  }
  return std::unique_ptr<LoopKernel>(new LoopKernel(std::move(program)));
}

void LoopKernel::run(const void* const* inputs, void* out) const {
  KILN_CHECK(num_outputs() == 1, "run() of a loop kernel with ", num_outputs(), " outputs");
  run_outputs(inputs, &out);
}

void LoopKernel::run_outputs(const void* const* inputs, void* const* outs) const {
  run_on_team(work() >= kParallelThreshold, [&] { run_team(inputs, outs); });
}

void LoopKernel::run_team(const void* const* inputs, void* const* outs) const { program_->run_team(inputs, outs, run_); }

size_t LoopKernel::num_outputs() const { return program_->stages.back().results.size(); }

void LoopKernel::prepare_team(const void* const* inputs) const { program_->prepare_team(inputs, run_); }

int64_t LoopKernel::work() const { return program_->stages.back().shape.num_elements(); }

const Shape& LoopKernel::shape() const { return program_->stages.back().shape; }

template <typename T>
void LoopKernel::read(int64_t base, int64_t n, T* dst, LoopScratch& scratch) const {
  if (program_->use_double) program_->read<T, double>(run_, base, n, dst, scratch.f64);
  else program_->read<T, float>(run_, base, n, dst, scratch.f32);
}

template void LoopKernel::read<float>(int64_t, int64_t, float*, LoopScratch&) const;
template void LoopKernel::read<double>(int64_t, int64_t, double*, LoopScratch&) const;

}  // namespace kiln::cpu
