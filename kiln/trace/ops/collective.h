// The collectives beside all_reduce (replica_context.h), as JAX's lax has them: all_gather,
// reduce_scatter (psum_scatter), all_to_all and collective_permute (ppermute). Each runs over
// the replicas in sync of the current replica context, or over `groups` of them (the replica
// ids of each group, every replica in one: a collective along one axis of a device mesh);
// empty groups mean all replicas. Inside a replica context they emit one IR instruction in
// the compiled step; outside one (a single replica) they compute what one replica would.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "kiln/ir/opcode.h"
#include "kiln/trace/replica_context.h"

namespace kiln {

/// Every replica's x of the group concatenated along `dim`, in group order (lax.all_gather
/// with tiled=True).
Tensor all_gather(const Tensor& x, int dim, const ReplicaGroups& groups = {});
/// The sum (or mean) of x over the group, split along `dim` into one part per replica: the
/// replica at position p of its group keeps part p. x.dims[dim] must divide by the group size.
Tensor reduce_scatter(const Tensor& x, ir::ReduceKind kind, int dim, const ReplicaGroups& groups = {});
/// x split along `split_dim` into one part per replica of the group, part i sent to the
/// group's replica i; the parts received concatenated along `concat_dim` in group order.
Tensor all_to_all(const Tensor& x, int split_dim, int concat_dim, const ReplicaGroups& groups = {});
/// x sent from each pair's source to its target (positions in the group; replica ids without
/// groups); a replica that is no pair's target receives zeros (XLA's rule).
Tensor collective_permute(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& pairs,
                          const ReplicaGroups& groups = {});

namespace trace {
/// Applies collective `op` to x over `groups` of the current replicas: `set` fills the op's
/// own attrs (dims, kind, pairs), this the group size and groups, checked against the replica
/// count (ValueError naming the op). Emits it in a trace with several replicas; with one
/// replica returns one replica's result; with several and no trace throws ValueError.
Tensor emit_collective(ir::Opcode op, const Tensor& x, const std::function<void(ir::Attrs&)>& set,
                       const ReplicaGroups& groups);
}  // namespace trace

}  // namespace kiln
