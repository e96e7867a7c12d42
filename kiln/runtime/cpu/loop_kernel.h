// LoopKernel: runs a loop-fusion body (elementwise ops, broadcasts, converts, constants, iota)
// as one pass over the output in L1-sized chunks, parallel over chunks with OpenMP. The body
// is compiled once into a flat register program; no code is generated at run time.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/core/shape.h"
#include "kiln/ir/computation.h"

namespace kiln::cpu {

class LoopProgram;

/// One run's prepared inputs: where each load reads, with inner stages materialized.
struct LoopRun {
  std::vector<HostTensor> scratch;
  std::vector<std::vector<const void*>> srcs;
};

/// Per-thread registers for LoopKernel::read.
struct LoopScratch {
  std::vector<float> f32;
  std::vector<double> f64;
};

class LoopKernel {
 public:
  /// Compiles `body` (its outputs()[0] is the result). Returns nullptr when the body holds an
  /// op a loop kernel cannot run (the caller then falls back to another kernel).
  static std::unique_ptr<LoopKernel> create(const ir::Computation& body);
  /// Compiles the value of `root`, whose leaves are parameters of its computation.
  static std::unique_ptr<LoopKernel> create_for(const ir::Instruction& root);
  ~LoopKernel();

  /// inputs[i] points at the data of body parameter i; `out` receives the result. Runs on
  /// its own team, or on the caller's when called inside one.
  void run(const void* const* inputs, void* out) const;
  /// Team work (team.h): every thread of the current team calls it.
  void run_team(const void* const* inputs, void* out) const;
  const Shape& shape() const;
  /// Elements computed per run (sizes the team).
  int64_t work() const;

  /// Streaming use (reductions): prepare_team once per run (team work), then read any range of
  /// the result's row-major elements from any thread, each with its own scratch. Nothing of
  /// the result's size is allocated. An executable runs one step at a time, so the per-run
  /// state lives in the kernel.
  void prepare_team(const void* const* inputs) const;
  template <typename T>
  void read(int64_t base, int64_t n, T* dst, LoopScratch& scratch) const;

 private:
  explicit LoopKernel(std::unique_ptr<LoopProgram> program);
  std::unique_ptr<LoopProgram> program_;
  mutable LoopRun run_;  // this run's load sources and inner-stage values, shared by the team
};

}  // namespace kiln::cpu
