// ReplicaContext: which replica the calling thread runs, for data-parallel strategies
// (distribute/). A kiln::Function called inside one compiles and caches an executable per
// replica, bound to the strategy's collectives, and runs it on that replica's copies of the
// variables; trace::all_reduce emits the collective only there. MirrorScope makes new
// Variables mirrored (one copy per local replica). Both are thread_local RAII stacks, the
// kind of process state docs/style.md 2.7 allows.
#pragma once

#include <memory>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/ir/attrs.h"
#include "kiln/runtime/collectives.h"
#include "kiln/trace/tensor.h"
#include "kiln/trace/variable.h"

namespace kiln::runtime {
class Backend;
}

namespace kiln::trace {

struct VariableState;
class TraceContext;

struct ReplicaContext {
  /// This replica's id among the replicas of this process (0 .. num_local_replicas-1).
  int replica_id = 0;
  /// Replicas in this process: each mirrored variable has this many copies.
  int num_local_replicas = 1;
  /// Where all_reduce meets every replica (all processes); null for one replica.
  std::shared_ptr<runtime::Collectives> collectives;
  /// This replica's id among all replicas in sync (worker index x local replicas + replica_id):
  /// its shard's place in the global batch.
  int global_replica_id = 0;
  /// The backend this replica compiles and runs on (a MirroredStrategy over GPUs: cuda:r);
  /// null: the kiln::Function's own.
  std::shared_ptr<runtime::Backend> backend;
  /// Replicas in sync across all processes.
  int num_replicas_in_sync() const { return collectives ? collectives->num_replicas() : 1; }
};

/// The innermost ReplicaScope of this thread, or nullptr (cross-replica / no strategy).
const ReplicaContext* current_replica_context();

/// Runs this thread as `context`'s replica for the scope's lifetime.
class ReplicaScope {
 public:
  explicit ReplicaScope(ReplicaContext context);
  ~ReplicaScope();
  ReplicaScope(const ReplicaScope&) = delete;
  ReplicaScope& operator=(const ReplicaScope&) = delete;
};

/// Variables created in its lifetime on this thread get `copies` copies (a strategy's scope()).
class MirrorScope {
 public:
  explicit MirrorScope(int copies);
  ~MirrorScope();
  MirrorScope(const MirrorScope&) = delete;
  MirrorScope& operator=(const MirrorScope&) = delete;
};

/// Copies a Variable made now gets: the replica context's local replicas, else the innermost
/// MirrorScope's count, else 1.
int current_mirror_count();

/// Replica `replica`'s copy of a variable (0: its primary storage). Missing copies are made
/// from the primary, so a variable created outside scope() is mirrored on first replicated
/// use; callers make them before any replica runs (Function does so while tracing).
HostTensor& replica_storage(VariableState& variable, int replica);
/// Makes sure `variable` has `copies` copies (copying the primary).
void ensure_mirrors(VariableState& variable, int copies);

/// While alive, reads of `variables` in the current trace give their sums over every replica
/// in sync (tf.distribute's cross-replica read of SyncOnRead SUM variables, where Keras
/// computes metric results), made with one all_reduce per dtype. Without a trace or with one
/// replica the reads are unchanged.
class SummedReads {
 public:
  explicit SummedReads(const std::vector<Variable>& variables);
  ~SummedReads();
  SummedReads(const SummedReads&) = delete;
  SummedReads& operator=(const SummedReads&) = delete;

 private:
  TraceContext* context_ = nullptr;
  std::vector<const VariableState*> overridden_;
};

}  // namespace kiln::trace

namespace kiln {

/// The replica ids of each group a collective runs over (all of one size, every replica in
/// one); empty: all replicas in sync in one group.
using ReplicaGroups = std::vector<Dims>;

/// all_reduce(x, kind) over the replicas in sync (or within each of `groups`): the sum or mean
/// of every replica's x, emitted as one IR instruction in the compiled step. Outside a replica
/// context, or with one replica, it is x itself (so single-device code pays nothing). The
/// other collectives are in trace/ops/collective.h.
Tensor all_reduce(const Tensor& x, ir::ReduceKind kind, const ReplicaGroups& groups = {});

}  // namespace kiln
