// The reference evaluator's control flow: while and conditional run their computations with
// evaluate(); their results are a vector that get_tuple_element reads.
#include "kiln/ir/reference_eval.h"

#include "kiln/core/check.h"
#include "kiln/ir/shape_inference.h"

namespace kiln::ir {
namespace {

bool condition_holds(const Computation& condition, std::span<const HostTensor> carried) {
  return evaluate(condition, carried)[0].data<bool>()[0];
}

std::vector<HostTensor> run_while(const Instruction& inst, std::span<const HostTensor> init) {
  const Attrs& a = inst.attrs();
  std::vector<HostTensor> carried(init.begin(), init.end());
  int64_t iterations = 0;
  while (condition_holds(*a.condition, carried)) {
    carried = evaluate(*a.body, carried);
    ++iterations;
  }
  KILN_CHECK(a.trip_count < 0 || iterations == a.trip_count, "while %", inst.id(), " says trip_count=",
             a.trip_count, " but ran ", iterations, " iterations");
  return carried;
}

std::vector<HostTensor> run_conditional(const Instruction& inst, std::span<const HostTensor> args) {
  const auto& branches = inst.attrs().branches;
  const HostTensor& selector = args[0];
  size_t pick = 0;
  if (selector.dtype() == DType::kBool) {
    pick = selector.data<bool>()[0] ? 0 : 1;
  } else {
    const int64_t i = selector.to_vector<int64_t>()[0];
    pick = i < 0 || i >= static_cast<int64_t>(branches.size()) ? branches.size() - 1 : static_cast<size_t>(i);
  }
  return evaluate(*branches[pick], args.subspan(1));
}

}  // namespace

std::vector<HostTensor> evaluate_tuple(const Instruction& inst, std::span<const HostTensor> operand_values) {
  KILN_CHECK(is_tuple_op(inst.opcode()), opcode_name(inst.opcode()), " %", inst.id(), " yields no tuple");
  KILN_CHECK(operand_values.size() == inst.operand_count(), opcode_name(inst.opcode()), " got ",
             operand_values.size(), " operand values");
  std::vector<HostTensor> results =
      inst.opcode() == Opcode::kWhile ? run_while(inst, operand_values) : run_conditional(inst, operand_values);
  // A while that never iterates returns its operands: never share storage with them.
  for (HostTensor& r : results)
    for (const HostTensor& op : operand_values)
      if (r.shares_storage_with(op)) r = r.clone();
  return results;
}

}  // namespace kiln::ir
