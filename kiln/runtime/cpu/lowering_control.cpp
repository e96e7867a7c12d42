// The CPU lowering's control flow and collectives (cpu_lowerer_impl.h): while and
// conditional as steps running their nested programs (control_flow_steps.h),
// get_tuple_element as a copy of a result, all_reduce through the replicas' collectives.
#include "kiln/runtime/cpu/cpu_lowerer_impl.h"

#include <cstring>

#include "kiln/core/check.h"
#include "kiln/ir/printer.h"

namespace kiln::cpu::lowering {

bool Lowerer::while_loop(const Instruction& inst) { return lower_tuple(inst); }
bool Lowerer::conditional(const Instruction& inst) { return lower_tuple(inst); }

bool Lowerer::lower_tuple(const Instruction& inst) {
  if (!compile_nested_)
    KILN_THROW(CompileError, "[cpu] ", ir::describe(inst), " needs its computations compiled, and this "
               "lowering was given no compiler for them.");
  std::shared_ptr<TupleStep> t;
  if (inst.opcode() == Opcode::kWhile) t = std::make_shared<WhileStep>(inst, compile_nested_);
  else t = std::make_shared<ConditionalStep>(inst, compile_nested_);
  tuples_[&inst] = t;
  exe_.add_nested_bytes(t->held_bytes(), t->activation_bytes());
  Step s = make_step(inst, str_cat(ir::opcode_name(inst.opcode()), "(nested programs)"));
  s.run = [reads = s.reads, t](void* const* values) {
    with_pointers(reads, {}, values, [&](const void* const* in, void* const*) { t->run(in); });
  };
  exe_.add_step(std::move(s));
  return true;
}

bool Lowerer::get_tuple_element(const Instruction& inst) {
  std::shared_ptr<TupleStep> t = tuples_.at(inst.operand(0));
  const size_t i = static_cast<size_t>(inst.attrs().tuple_index);
  const size_t bytes = static_cast<size_t>(inst.shape().byte_size());
  add(inst, "get_tuple_element(copy)", [t, i, bytes](const void* const*, void* out) {
    std::memcpy(out, t->results()[i].raw_data(), bytes);
  });
  return true;
}

bool Lowerer::all_reduce(const Instruction& inst) {
  const auto copy = copy_run(inst);
  const std::shared_ptr<runtime::Collectives>& c = exe_.collectives();
  if (!c || c->num_replicas() <= 1) {  // one replica: the sum and the mean are the value itself
    add(inst, "all_reduce(1 replica)", copy);
    return true;
  }
  // Copy the operand into the result, then reduce it there with the other replicas.
  const int replica = exe_.replica_id();
  const ir::ReduceKind kind = inst.attrs().reduce_kind;
  const DType dtype = inst.dtype();
  const int64_t count = inst.shape().num_elements();
  add(inst, str_cat("all_reduce(", c->num_replicas(), " replicas)"),
      [copy, c, replica, kind, dtype, count](const void* const* in, void* out) {
        copy(in, out);
        c->all_reduce(replica, kind, dtype, out, count);
      });
  return true;
}

}  // namespace kiln::cpu::lowering
