// Running a lowered step: resolve where every value lives, call the steps in order, then copy
// what the plan says must be copied into outputs.
#include "kiln/runtime/cpu/cpu_executable.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "kiln/core/check.h"
#include "kiln/core/trace_recorder.h"
#include "kiln/ir/printer.h"
#include "kiln/runtime/cpu/team_impl.h"

namespace kiln::cpu {

CpuExecutable::CpuExecutable(std::unique_ptr<ir::Module> module, compiler::MemoryPlan plan, bool profile,
                             bool thread_governor)
    : module_(std::move(module)), scratch_(std::make_unique<ir::Module>("scratch")), plan_(std::move(plan)),
      profile_(profile), thread_governor_(thread_governor) {
  for (size_t i = 0; i < plan_.order.size(); ++i) ids_[plan_.order[i]] = static_cast<int>(i);
  // Allocated and zeroed now, so the first step pays no page faults and RSS shows the plan.
  arena_ = HostTensor(Shape(DType::kU8, {std::max<int64_t>(plan_.arena_bytes, 1)}));
  values_.resize(plan_.order.size(), nullptr);
}

std::vector<std::string> CpuExecutable::reference_fallbacks() const {
  std::vector<std::string> ops;
  for (const ReferenceFallback& f : fallbacks_) ops.push_back(f.op);
  return ops;
}

int CpuExecutable::value_id(const ir::Instruction* inst) const {
  auto it = ids_.find(inst);
  KILN_CHECK(it != ids_.end(), "instruction %", inst->id(), " has no value in the memory plan");
  return it->second;
}

std::vector<HostTensor> CpuExecutable::run_into(std::span<HostTensor> arguments, std::span<HostTensor> given) {
  const ir::Computation& entry = *module_->entry();
  const auto& params = entry.parameters();
  if (arguments.size() != params.size())
    KILN_THROW(ShapeError, "[", module_->name(), "] expected ", params.size(), " arguments, received ",
               arguments.size(), ".");
  for (size_t i = 0; i < params.size(); ++i)
    if (!(arguments[i].shape() == params[i]->shape()))
      KILN_THROW(ShapeError, "[", module_->name(), "] argument ", i, " '", params[i]->name(), "' must be ",
                 params[i]->shape(), ", received ", arguments[i].shape(), ".");

  // Outputs: donated ones are their argument; the rest are fresh tensors.
  const auto& outs = entry.outputs();
  std::vector<int> alias_of(outs.size(), -1);
  for (const auto& a : module_->aliases()) alias_of[static_cast<size_t>(a.output_index)] = a.parameter_index;
  std::vector<HostTensor> results(outs.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    if (alias_of[k] >= 0) {
      results[k] = arguments[static_cast<size_t>(alias_of[k])];
    } else if (k < given.size() && given[k].defined()) {
      if (!(given[k].shape() == outs[k]->shape()))
        KILN_THROW(ShapeError, "[", module_->name(), "] output ", k, " must be ", outs[k]->shape(),
                   ", the buffer given is ", given[k].shape(), ".");
      results[k] = given[k];
    } else {
      // Fresh outputs are fully written by their step or output copy: no zero-fill.
      results[k] = HostTensor::uninitialized(outs[k]->shape());
    }
  }

  auto* arena = static_cast<std::byte*>(arena_.raw_data());
  for (size_t v = 0; v < plan_.order.size(); ++v) {
    const ir::Instruction* inst = plan_.order[v];
    const compiler::BufferInfo& b = plan_.buffers.at(inst);
    switch (b.kind) {
      case compiler::BufferKind::kArena: values_[v] = arena + b.offset; break;
      case compiler::BufferKind::kParameter:
      case compiler::BufferKind::kDonated:
        values_[v] = arguments[static_cast<size_t>(b.parameter_index)].raw_data();
        break;
      case compiler::BufferKind::kOutput: values_[v] = results[static_cast<size_t>(b.output_index)].raw_data(); break;
      case compiler::BufferKind::kConstant: values_[v] = const_cast<void*>(inst->attrs().literal.raw_data()); break;
      case compiler::BufferKind::kAlias: values_[v] = values_[static_cast<size_t>(value_id(b.alias_of))]; break;
    }
  }
  // The governor's thread count holds for this run only; the caller's (a logical device's
  // share, say) is the most it may use and is restored after. It is fed the time from one
  // run's start to the next's: on a busy machine the cost of a full team is mostly outside
  // the run, where its idle workers spin against the caller's own work between steps.
  const int share = omp_get_max_threads();
  if (!governor_ || governor_->max_threads() != share) governor_.emplace(share, thread_governor_);
  const auto start = std::chrono::steady_clock::now();
  if (last_start_) governor_->record(std::chrono::duration<double>(start - *last_start_).count());
  last_start_ = start;
  const int threads = governor_->threads();
  last_run_threads_ = threads;
  if (threads != share) omp_set_num_threads(threads);
  if (ActiveRecorder recorder; recorder.get() != nullptr) {
    run_traced(*recorder.get());
  } else if (profile_) {
    step_ns_.resize(steps_.size(), 0);
    for (size_t i = 0; i < steps_.size(); ++i) {
      auto t0 = std::chrono::steady_clock::now();
      steps_[i].run(values_.data());
      step_ns_[i] += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    }
    ++runs_;
  } else {
    for (const Step& step : steps_) step.run(values_.data());
  }
  if (threads != share) omp_set_num_threads(share);
  for (const compiler::OutputCopy& c : plan_.output_copies) {
    HostTensor& dst = results[static_cast<size_t>(c.output_index)];
    std::memcpy(dst.raw_data(), values_[static_cast<size_t>(value_id(c.source))], static_cast<size_t>(dst.byte_size()));
  }
  return results;
}

// Under a TraceSession: every step is an event on the thread that launched it (a team step's
// workers record their parts as "team" events, group_team_steps), with its bytes and flops,
// inside one event for the program.
void CpuExecutable::run_traced(TraceRecorder& recorder) {
  if (step_bytes_.size() != steps_.size()) {
    step_bytes_.assign(steps_.size(), 0);
    for (size_t i = 0; i < steps_.size(); ++i)
      for (const std::vector<int>* ids : {&steps_[i].reads, &steps_[i].writes})
        for (int v : *ids) step_bytes_[i] += plan_.order[static_cast<size_t>(v)]->shape().byte_size();
  }
  const int64_t start = TraceRecorder::now_ns();
  for (size_t i = 0; i < steps_.size(); ++i) {
    const int64_t t0 = TraceRecorder::now_ns();
    steps_[i].run(values_.data());
    recorder.add(steps_[i].label, "kernel", t0, TraceRecorder::now_ns(),
                 str_cat(module_->name(), " step ", i, steps_[i].source.empty() ? "" : " # ", steps_[i].source),
                 step_bytes_[i], steps_[i].flops > 0 ? steps_[i].flops : -1);
  }
  recorder.add(module_->name(), "step", start, TraceRecorder::now_ns(), str_cat(steps_.size(), " kernels"));
}

void CpuExecutable::group_team_steps() {
  std::vector<Step> grouped;
  for (size_t i = 0; i < steps_.size();) {
    size_t j = i;
    while (j < steps_.size() && steps_[j].team) ++j;
    if (j - i < 2) {  // nothing to merge
      grouped.push_back(std::move(steps_[i]));
      i = std::max(j, i + 1);
      continue;
    }
    Step g;
    auto members = std::make_shared<std::vector<std::function<void(void* const*)>>>();
    auto member_labels = std::make_shared<std::vector<std::string>>();
    std::string labels;
    for (size_t k = i; k < j; ++k) {
      members->push_back(std::move(steps_[k].team));
      member_labels->push_back(steps_[k].label);
      g.reads.insert(g.reads.end(), steps_[k].reads.begin(), steps_[k].reads.end());
      g.writes.insert(g.writes.end(), steps_[k].writes.begin(), steps_[k].writes.end());
      g.work = std::max(g.work, steps_[k].work);
      g.flops += steps_[k].flops;
      labels += (labels.empty() ? "" : ", ") + steps_[k].label;
      if (g.source.empty()) g.source = steps_[k].source;
    }
    g.label = str_cat("team(", j - i, " kernels: ", labels, ")");
    const bool parallel = g.work >= kParallelThreshold;
    // Each member ends in a barrier (omp for / single), so members see their inputs complete.
    // Under a TraceSession every team thread records its part of each member (category
    // "team", up to the member's closing barrier), which gives each OpenMP worker a track.
    g.run = [members, member_labels, parallel](void* const* values) {
      const ActiveRecorder active;
      TraceRecorder* recorder = active.get();
      run_on_team(parallel, [&] {
        for (size_t k = 0; k < members->size(); ++k) {
          const int64_t t0 = recorder ? TraceRecorder::now_ns() : 0;
          (*members)[k](values);
          if (recorder) recorder->add((*member_labels)[k], "team", t0, TraceRecorder::now_ns());
        }
      });
    };
    grouped.push_back(std::move(g));
    i = j;
  }
  steps_ = std::move(grouped);
}

CpuExecutable::~CpuExecutable() {
  if (!profile_ || runs_ == 0) return;
  std::ostringstream os;
  int64_t total = 0;
  for (int64_t ns : step_ns_) total += ns;
  os << "KILN_PROFILE " << module_->name() << ": " << runs_ << " runs, " << total / runs_ / 1000.0
     << " us per run\n";
  for (size_t i = 0; i < steps_.size(); ++i)
    os << "  step " << i << " " << step_ns_[i] / runs_ / 1000.0 << " us  " << steps_[i].label
       << (steps_[i].source.empty() ? "" : "  # " + steps_[i].source) << "\n";
  std::fputs(os.str().c_str(), stderr);
}

std::string CpuExecutable::describe() const {
  std::ostringstream os;
  os << "lowered " << module_->name() << ": " << steps_.size() << " kernel launches, arena "
     << plan_.arena_bytes << " bytes, planned peak " << plan_.peak_bytes() << " bytes\n";
  for (size_t i = 0; i < steps_.size(); ++i) {
    os << "  step " << i << ": " << steps_[i].label;
    if (!steps_[i].source.empty()) os << "  # " << steps_[i].source;
    os << "\n";
  }
  return os.str();
}

}  // namespace kiln::cpu
