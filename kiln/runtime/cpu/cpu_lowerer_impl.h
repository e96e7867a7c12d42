// The CPU lowering's Lowerer: a LoweringVisitor (runtime/lowering_visitor.h) whose handlers
// turn each planned entry instruction into a Step with the best CPU kernel for it. Its
// handlers are split by how an op family runs: lowering.cpp (the walk, fusions, the reference
// fallback), lowering_loops.cpp (generated loops and reductions: elementwise, iota, views,
// reduce, argmax, rng_bits), lowering_data_movement.cpp (copies and index kernels: reshape,
// concatenate, pad, gather, scatter_add, dynamic slices), lowering_libraries.cpp (oneDNN:
// dot_general, convolutions, pooling), lowering_control.cpp (while, conditional,
// get_tuple_element, the collectives). Internal to those files.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/runtime/cpu/control_flow_steps.h"
#include "kiln/runtime/cpu/cpu_executable.h"
#include "kiln/runtime/cpu/loop_kernel.h"
#include "kiln/runtime/cpu/lowering.h"
#include "kiln/runtime/cpu/onednn_matmul.h"
#include "kiln/runtime/cpu/team_impl.h"
#include "kiln/runtime/cpu/widen.h"
#include "kiln/runtime/lowering_visitor.h"

namespace kiln::cpu::lowering {

using ir::Instruction;
using ir::Opcode;

// A computation holding just `inst` over fresh parameters, so one-op kernels and fused
// kernels share one code path.
const ir::Computation* wrap(ir::Module& scratch, const Instruction& inst);

class Lowerer : public runtime::LoweringVisitor {
 public:
  Lowerer(CpuExecutable& exe, const LoweringOptions& options, const CompileNested& compile_nested)
      : exe_(exe), options_(options), compile_nested_(compile_nested) {}

  void lower_all();

 private:
  KILN_LOWERING_VISITOR_OVERRIDES

  // The handler of `inst`'s op, or the reference evaluator where it has no kernel.
  void lower_one(const Instruction& inst);
  // Runs `inst` on the reference evaluator, noted as a fallback (reference_fallbacks.h).
  void fallback(const Instruction& inst);

  Step make_step(const Instruction& inst, std::string label);
  // Lowers the group's members as one kernel (loop_grouping.h), and empties it.
  void lower_group(std::vector<const Instruction*>& group);
  bool has_step(const Instruction& inst) const;

  // Converts of f32 parameters (inputs, variables, constants) to bf16/f16 that only widened
  // matmuls read: those read the f32 values and round them as they widen them, one pass where
  // the convert and the widening were two, so the convert runs no step (its 16-bit buffer stays
  // planned, unwritten). Only where every 16-bit matmul is widened (oneDNN has no 16-bit matmul
  // on this CPU, or KILN_16BIT_CONTRACTIONS=f32), and only while the parameter's buffer holds
  // its values: before any variable update writes into it.
  void find_folded_converts();
  // `u` is a matmul (a dot_general, or an output fusion of one) reading `c` only as its lhs,
  // rhs or bias, in a layout the matmul kernel runs.
  static bool folds_into(const Instruction& u, const Instruction* c);
  bool all_16bit_matmuls_widened(DType t);

  // `body` (or `inst` alone, wrapped) as a loop kernel; false when the loop IR cannot hold it.
  bool try_loop(const Instruction& inst, const ir::Computation& body, const std::string& label);
  bool try_loop(const Instruction& inst);
  bool try_reduce(const Instruction& inst, const Instruction& reduce, const std::string& label);
  // `dot` is `inst` itself, or the dot inside `inst`'s output-fusion body (then its operands
  // and the bias are body parameters 0, 1 and 2 by OutputFusionPass's contract, which are the
  // fusion's operands 0, 1, 2).
  bool try_matmul(const Instruction& inst, const Instruction& dot, bool has_bias,
                  compiler::EpilogueActivation activation, std::string label);
  // A convolution op, or an output fusion of one: FixedOrderConvolution when batch-invariant,
  // else oneDNN; false when neither runs `inst`.
  bool try_convolution(const Instruction& inst);
  // reduce_window(_grad) on oneDNN's pooling; false when it cannot run `inst`.
  bool try_pooling(const Instruction& inst);

  // while/conditional: a step running the nested programs (always lowered: true).
  bool lower_tuple(const Instruction& inst);
  // The replicas a collective meets (1 without collectives), its groups checked against them.
  int64_t collective_replicas(const Instruction& inst) const;
  // A collective's step (lowering_control.cpp): a copy with one replica, else `run` on the
  // executable's collectives.
  template <typename Run>
  bool add_collective(const Instruction& inst, Run run);
  // Whether the plan puts `a` and `b` in the same bytes.
  bool same_bytes(const Instruction* a, const Instruction* b) const;
  // dynamic_slice or dynamic_update_slice on the slice kernel, each start (the operands after x,
  // and after the update) read in its own index dtype.
  bool add_dynamic_slice(const Instruction& inst);

  // Calls `fn(inputs, outputs)` with the pointers of values `reads` and `writes`: from stack
  // arrays up to kInlineOperands each (no allocation per run), from the heap beyond (a
  // concatenate of many operands).
  static constexpr size_t kInlineOperands = 16;
  template <typename Fn>
  static void with_pointers(const std::vector<int>& reads, const std::vector<int>& writes, void* const* values,
                            const Fn& fn) {
    const void* in_inline[kInlineOperands];
    void* out_inline[kInlineOperands];
    std::vector<const void*> in_heap;
    std::vector<void*> out_heap;
    const void** in = in_inline;
    void** out = out_inline;
    if (reads.size() > kInlineOperands) in = (in_heap.resize(reads.size()), in_heap.data());
    if (writes.size() > kInlineOperands) out = (out_heap.resize(writes.size()), out_heap.data());
    for (size_t i = 0; i < reads.size(); ++i) in[i] = values[reads[i]];
    for (size_t i = 0; i < writes.size(); ++i) out[i] = values[writes[i]];
    fn(in, out);
  }

  // Runs `fn(inputs, out)` with the operand and result pointers of the step.
  template <typename Fn>
  void add(const Instruction& inst, std::string label, Fn fn) {
    add_step(make_step(inst, std::move(label)), fn);
  }

  // Runs `fn(inputs, out)` with the pointers of `s`'s reads and its first write.
  template <typename Fn>
  void add_step(Step s, Fn fn) {
    s.run = [reads = s.reads, writes = s.writes, fn](void* const* values) {
      with_pointers(reads, writes, values, [&](const void* const* in, void* const* outs) { fn(in, outs[0]); });
    };
    exe_.add_step(std::move(s));
  }

  // A kernel that is team work (team_impl.h): it runs alone on its own team, or shares one with
  // its neighbours once CpuExecutable::group_team_steps merges them.
  template <typename Fn>
  void add_team(const Instruction& inst, std::string label, int64_t work, Fn team_fn) {
    add_team_step(make_step(inst, std::move(label)), work,
                  [team_fn](const void* const* in, void* const* outs) { team_fn(in, outs[0]); });
  }

  // `team_fn(inputs, outputs)` with the pointers of the step's reads and writes.
  template <typename Fn>
  void add_team_step(Step s, int64_t work, Fn team_fn) {
    auto call = [reads = s.reads, writes = s.writes, team_fn](void* const* values) {
      with_pointers(reads, writes, values, team_fn);
    };
    const bool parallel = work >= kParallelThreshold;
    s.run = [call, parallel](void* const* values) { run_on_team(parallel, [&] { call(values); }); };
    s.team = call;
    s.work = work;
    exe_.add_step(std::move(s));
  }

  // A step copying the operand's bytes into the result (none when the plan gave both the same).
  auto copy_run(const Instruction& inst) const {
    const int64_t bytes = inst.shape().byte_size();
    return [bytes](const void* const* in, void* out) {
      if (in[0] != out) std::memcpy(out, in[0], static_cast<size_t>(bytes));
    };
  }

  CpuExecutable& exe_;
  const LoweringOptions options_;
  // The f32 copies of the executable's widened 16-bit matmuls, convolutions and pooling: one
  // buffer, as the steps run one at a time.
  std::shared_ptr<WidenScratch> widen_scratch_ = std::make_shared<WidenScratch>();
  std::unordered_set<const Instruction*> folded_converts_;  // find_folded_converts
  std::map<DType, bool> native_16bit_;                     // oneDNN has a 16-bit matmul here
  CompileNested compile_nested_;
  std::unordered_map<const Instruction*, std::shared_ptr<TupleStep>> tuples_;
  LoopJitBatch batch_;
};

}  // namespace kiln::cpu::lowering
