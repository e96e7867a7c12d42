// The collectives' trace functions: one place checks the groups against the replica count and
// decides between emitting the op (a compiled step of several replicas) and computing one
// replica's result (a single replica, traced or eager).
#include "kiln/trace/ops/collective.h"

#include "kiln/core/check.h"
#include "kiln/ir/collectives.h"
#include "kiln/trace/emit.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/trace_context.h"

namespace kiln {
namespace trace {

Tensor emit_collective(ir::Opcode op, const Tensor& x, const std::function<void(ir::Attrs&)>& set,
                       const ReplicaGroups& groups) {
  const ReplicaContext* rc = current_replica_context();
  const int64_t replicas = rc == nullptr ? 1 : rc->num_replicas_in_sync();
  ir::Attrs attrs;
  set(attrs);
  attrs.group_size = groups.empty() ? replicas : static_cast<int64_t>(groups[0].size());
  attrs.replica_groups = groups;
  const std::string prefix = str_cat("[", where(ir::opcode_name(op)), "] ");
  ir::collective_shape(op, x.shape(), attrs, prefix);  // the op's own checks first
  if (std::string error = ir::replica_groups_error(groups, attrs.group_size, replicas); !error.empty())
    KILN_THROW(ValueError, prefix, error, ".");
  if (replicas > 1) {
    if (TraceContext::current() == nullptr)
      KILN_THROW(ValueError, prefix, ir::opcode_name(op), " over ", replicas, " replicas runs inside a compiled step "
                 "only. Hint: call it in the kiln::function the strategy runs.");
    return emit(op, {x}, attrs);
  }
  // One replica in a group of one: every collective but a permutation without the pair {0,0}
  // gives x back (a gather or scatter of one part, a mean of one value).
  if (op == ir::Opcode::kCollectivePermute && attrs.source_target_pairs.empty()) return zeros_like(x);
  return x;
}

namespace {
int64_t normalized(const Tensor& x, int dim) { return dim < 0 ? dim + x.rank() : dim; }
}  // namespace

}  // namespace trace

Tensor all_gather(const Tensor& x, int dim, const ReplicaGroups& groups) {
  return trace::emit_collective(ir::Opcode::kAllGather, x, [&](ir::Attrs& a) { a.dims = {trace::normalized(x, dim)}; },
                                groups);
}

Tensor reduce_scatter(const Tensor& x, ir::ReduceKind kind, int dim, const ReplicaGroups& groups) {
  return trace::emit_collective(ir::Opcode::kReduceScatter, x,
                                [&](ir::Attrs& a) {
                                  a.reduce_kind = kind;
                                  a.dims = {trace::normalized(x, dim)};
                                },
                                groups);
}

Tensor all_to_all(const Tensor& x, int split_dim, int concat_dim, const ReplicaGroups& groups) {
  return trace::emit_collective(
      ir::Opcode::kAllToAll, x,
      [&](ir::Attrs& a) { a.dims = {trace::normalized(x, split_dim), trace::normalized(x, concat_dim)}; }, groups);
}

Tensor collective_permute(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& pairs,
                          const ReplicaGroups& groups) {
  return trace::emit_collective(ir::Opcode::kCollectivePermute, x, [&](ir::Attrs& a) { a.source_target_pairs = pairs; },
                                groups);
}

}  // namespace kiln
