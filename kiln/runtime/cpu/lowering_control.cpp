// The CPU lowering's control flow and collectives (cpu_lowerer_impl.h): while and
// conditional as steps running their nested programs (control_flow_steps.h),
// get_tuple_element as a copy of a result, the collectives through the replicas' collectives
// (runtime/collectives.h); with one replica each is a copy (a permutation to nowhere: zeros).
#include "kiln/runtime/cpu/cpu_lowerer_impl.h"

#include <cstring>

#include "kiln/core/check.h"
#include "kiln/ir/collectives.h"
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

int64_t Lowerer::collective_replicas(const Instruction& inst) const {
  const std::shared_ptr<runtime::Collectives>& c = exe_.collectives();
  const int64_t replicas = c ? c->num_replicas() : 1;
  const ir::Attrs& a = inst.attrs();
  if (std::string error = ir::replica_groups_error(a.replica_groups, a.group_size, replicas); !error.empty())
    KILN_THROW(CompileError, "[cpu] ", ir::describe(inst), ": ", error, ".");
  return replicas;
}

bool Lowerer::all_reduce(const Instruction& inst) {
  const auto copy = copy_run(inst);
  const std::shared_ptr<runtime::Collectives>& c = exe_.collectives();
  if (collective_replicas(inst) <= 1) {  // one replica: the sum and the mean are the value itself
    add(inst, "all_reduce(1 replica)", copy);
    return true;
  }
  // Copy the operand into the result, then reduce it there with the other replicas.
  const int replica = exe_.replica_id();
  const ir::ReduceKind kind = inst.attrs().reduce_kind;
  const DType dtype = inst.dtype();
  const int64_t count = inst.shape().num_elements();
  const std::vector<Dims> groups = inst.attrs().replica_groups;
  if (!groups.empty()) {
    add(inst, str_cat("all_reduce(", c->num_replicas(), " replicas, groups of ", groups[0].size(), ")"),
        [copy, c, replica, groups, kind, dtype, count](const void* const* in, void* out) {
          copy(in, out);
          c->all_reduce_in_groups(replica, groups, kind, dtype, out, count);
        });
    return true;
  }
  add(inst, str_cat("all_reduce(", c->num_replicas(), " replicas)"),
      [copy, c, replica, kind, dtype, count](const void* const* in, void* out) {
        copy(in, out);
        c->all_reduce(replica, kind, dtype, out, count);
      });
  return true;
}

// A collective step on the executable's collectives: `run(collectives, replica, x, out)`. With
// one replica a group of one gathers, scatters and moves x itself: a copy.
template <typename Run>
bool Lowerer::add_collective(const Instruction& inst, Run run) {
  const std::string_view op = ir::opcode_name(inst.opcode());
  if (collective_replicas(inst) <= 1) {
    add(inst, str_cat(op, "(1 replica)"), copy_run(inst));
    return true;
  }
  const std::shared_ptr<runtime::Collectives> c = exe_.collectives();
  add(inst, str_cat(op, "(", c->num_replicas(), " replicas)"),
      [c, replica = exe_.replica_id(), run](const void* const* in, void* out) { run(*c, replica, in[0], out); });
  return true;
}

bool Lowerer::all_gather(const Instruction& inst) {
  const ir::Attrs& a = inst.attrs();
  return add_collective(inst, [groups = a.replica_groups, x = inst.operand(0)->shape(), dim = a.dims[0]](
                                  runtime::Collectives& c, int replica, const void* in, void* out) {
    c.all_gather(replica, groups, x, dim, in, out);
  });
}

bool Lowerer::reduce_scatter(const Instruction& inst) {
  const ir::Attrs& a = inst.attrs();
  return add_collective(inst, [groups = a.replica_groups, kind = a.reduce_kind, x = inst.operand(0)->shape(),
                               dim = a.dims[0]](runtime::Collectives& c, int replica, const void* in, void* out) {
    c.reduce_scatter(replica, groups, kind, x, dim, in, out);
  });
}

bool Lowerer::all_to_all(const Instruction& inst) {
  const ir::Attrs& a = inst.attrs();
  return add_collective(inst, [groups = a.replica_groups, x = inst.operand(0)->shape(), split = a.dims[0],
                               concat = a.dims[1]](runtime::Collectives& c, int replica, const void* in, void* out) {
    c.all_to_all(replica, groups, x, split, concat, in, out);
  });
}

bool Lowerer::collective_permute(const Instruction& inst) {
  const ir::Attrs& a = inst.attrs();
  if (collective_replicas(inst) <= 1 && a.source_target_pairs.empty()) {  // one replica, no pair {0,0}: zeros
    const size_t bytes = static_cast<size_t>(inst.shape().byte_size());
    add(inst, "collective_permute(1 replica, zeros)", [bytes](const void* const*, void* out) { std::memset(out, 0, bytes); });
    return true;
  }
  return add_collective(inst, [groups = a.replica_groups, pairs = a.source_target_pairs, x = inst.shape()](
                                  runtime::Collectives& c, int replica, const void* in, void* out) {
    c.collective_permute(replica, groups, pairs, x, in, out);
  });
}

}  // namespace kiln::cpu::lowering
