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
#include "kiln/runtime/executable.h"

namespace kiln::cpu {

/// Compiles a nested computation as a program: the computation becomes the entry of a new
/// module; `outputs` picks which of its outputs that module keeps (null: all).
using CompileNested = std::function<std::unique_ptr<runtime::Executable>(
    const ir::Computation& computation, const std::vector<size_t>* outputs, const std::string& label)>;

/// A while or conditional step: run() leaves the results in results().
class TupleStep {
 public:
  virtual ~TupleStep() = default;
  /// `operands` point at the instruction's operand values.
  virtual void run(const void* const* operands) = 0;
  const std::vector<HostTensor>& results() const { return results_; }

 protected:
  std::vector<HostTensor> results_;
};

/// A while: the carried values ping-pong between two sets of buffers (results_ and next_), so
/// an iteration copies nothing but the values the body really computes. Carried values the
/// body passes through unchanged (loop invariants: a scan's xs, captured weights) are not
/// outputs of the compiled body at all: they stay in place for the whole loop, and those no
/// get_tuple_element reads afterwards are not even copied in (results_ views the operand).
class WhileStep : public TupleStep {
 public:
  WhileStep(const ir::Instruction& loop, const CompileNested& compile);
  void run(const void* const* operands) override;

 private:
  std::unique_ptr<runtime::Executable> condition_, body_;
  std::vector<size_t> variant_;  // carried indices the body changes (its compiled outputs)
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

 private:
  std::vector<std::unique_ptr<runtime::Executable>> branches_;
  std::vector<Shape> operand_shapes_;
  DType selector_;
};

/// Loops whose body passes carried value i through unchanged: the indices that change.
std::vector<size_t> loop_variant_indices(const ir::Computation& body);

}  // namespace kiln::cpu
