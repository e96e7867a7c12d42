// while and conditional on the CPU: each nested computation is compiled as a program of its
// own (the full pass pipeline and memory plan run inside it), and the step runs those
// programs; the results stay here until the get_tuple_element steps copy them out.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/ir/instruction.h"
#include "kiln/ir/module.h"
#include "kiln/runtime/executable.h"

namespace kiln::cpu {

/// Compiles a nested computation as a program: the computation becomes the entry of a new
/// module; `outputs` picks which of its outputs that module keeps (null: all), and `aliases`
/// (output indices among those kept) which outputs it computes into a parameter's storage.
using CompileNested = std::function<std::unique_ptr<runtime::Executable>(
    const ir::Computation& computation, const std::vector<size_t>* outputs,
    const std::vector<ir::OutputAlias>& aliases, const std::string& label)>;

/// A while or conditional step: run() leaves the results in results().
class TupleStep {
 public:
  virtual ~TupleStep() = default;
  /// `operands` point at the instruction's operand values.
  virtual void run(const void* const* operands) = 0;
  const std::vector<HostTensor>& results() const { return results_; }
  /// What the step holds while its executable lives: the result and carried buffers it owns,
  /// and each nested program's arena, constants and own nested steps (its arguments and
  /// outputs are those buffers). Part of the enclosing program's planned peak.
  virtual int64_t held_bytes() const = 0;
  /// The nested programs' activations (arenas, theirs included): part of the enclosing
  /// program's planned activation bytes.
  virtual int64_t activation_bytes() const = 0;

 protected:
  std::vector<HostTensor> results_;
};

/// A while: the carried values ping-pong between two sets of buffers (results_ and next_), so
/// an iteration copies nothing but the values the body really computes. Carried values the
/// body passes through unchanged (loop invariants: a scan's xs, captured weights) are not
/// outputs of the compiled body at all: they stay in place for the whole loop, and those no
/// get_tuple_element reads afterwards are not even copied in (results_ views the operand).
/// A carried buffer the body only updates with a dynamic_update_slice (a scan's stacked
/// outputs) is updated in place (in_place_loop_outputs): an iteration writes just the update.
class WhileStep : public TupleStep {
 public:
  WhileStep(const ir::Instruction& loop, const CompileNested& compile);
  void run(const void* const* operands) override;
  int64_t held_bytes() const override;
  int64_t activation_bytes() const override;

 private:
  std::unique_ptr<runtime::Executable> condition_, body_;
  std::vector<size_t> variant_;  // carried indices the body changes (its compiled outputs)
  std::vector<bool> in_place_;   // per variant value: the body updates results_ in place
  std::vector<size_t> viewed_;   // invariant indices nobody reads after the loop, ascending
  std::vector<HostTensor> next_;  // one per variant value
  HostTensor pred_;
  int64_t trip_count_;
  std::string where_;
};

/// A conditional: runs the picked branch's program into results_.
class ConditionalStep : public TupleStep {
 public:
  ConditionalStep(const ir::Instruction& conditional, const CompileNested& compile);
  void run(const void* const* operands) override;
  int64_t held_bytes() const override;
  int64_t activation_bytes() const override;

 private:
  std::vector<std::unique_ptr<runtime::Executable>> branches_;
  std::vector<Shape> operand_shapes_;
  DType selector_;
};

/// Loops whose body passes carried value i through unchanged: the indices that change.
std::vector<size_t> loop_variant_indices(const ir::Computation& body);

/// The variant values (positions k in `variant`) the body may compute into their own carried
/// buffer: output variant[k] is a dynamic_update_slice of parameter variant[k], its only
/// reader, and no other output. Output k aliases parameter variant[k] in the compiled body, so
/// the planner donates the parameter to the update (or, should it not, copies the result there).
std::vector<ir::OutputAlias> in_place_loop_outputs(const ir::Computation& body, const std::vector<size_t>& variant);

}  // namespace kiln::cpu
