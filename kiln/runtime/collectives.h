// Collectives: how a compiled step's collective instructions talk to the other replicas. The
// runtime only calls this interface; distribute/ implements it (threads of one process, MPI
// ranks, or both), so backends never know which strategy runs them. all_reduce over every
// replica is its own primitive; the other collectives (all_gather, reduce_scatter, all_to_all,
// collective_permute, and all_reduce over replica groups) are made of one exchange, in which
// every replica reads every replica's operand (collectives.cpp), so each implementation
// provides that one step and they all compute the same bytes in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "kiln/core/dtype.h"
#include "kiln/ir/attrs.h"

namespace kiln::runtime {

/// Thrown in a replica waiting at an all_reduce when another replica of its process failed
/// (Strategy::run reports the other replica's error instead).
struct ReplicaAborted {};

class Collectives {
 public:
  virtual ~Collectives() = default;
  /// Replicas taking part in every all_reduce (across threads and processes).
  virtual int num_replicas() const = 0;
  /// Replaces `count` elements of `dtype` at `data` with their sum (or mean) over all replicas.
  /// `replica` is the caller's id among this process's replicas. Every replica must call it
  /// the same number of times in the same order (they do: they run one program).
  virtual void all_reduce(int replica, ir::ReduceKind kind, DType dtype, void* data, int64_t count) = 0;
  /// The id among all replicas in sync (all processes) of this process's replica `replica`.
  virtual int global_replica_id(int replica) const { return replica; }

  /// Reads every replica's operand: replica `replica` of this process offers `bytes` bytes at
  /// `in` (the same count on every replica); once all replicas have, `read` runs in this
  /// replica with every replica's bytes in global replica order, copies that stay valid while
  /// it runs (so it may write over `in`). The default has none: ConfigError.
  using OfferReader = std::function<void(std::span<const std::byte* const> offers)>;
  virtual void exchange(int replica, const void* in, int64_t bytes, const OfferReader& read);

  // The collectives made of exchange, on row-major buffers of shape `x` (the operand). `groups`
  // are ir::Attrs::replica_groups (empty: every replica in one group), checked by the caller
  // against num_replicas(); positions and sums follow group order, as the reference evaluator's.
  using Groups = std::vector<std::vector<int64_t>>;
  /// all_reduce within each group, in place (sum, mean: f32, f64, i32, i64).
  void all_reduce_in_groups(int replica, const Groups& groups, ir::ReduceKind kind, DType dtype, void* data,
                            int64_t count);
  /// out: the group's operands concatenated along `dim`.
  void all_gather(int replica, const Groups& groups, const Shape& x, int64_t dim, const void* in, void* out);
  /// out: this replica's part along `dim` of the group's sum (mean).
  void reduce_scatter(int replica, const Groups& groups, ir::ReduceKind kind, const Shape& x, int64_t dim,
                      const void* in, void* out);
  /// out: part p (this replica's position) of each group member's x split along split_dim,
  /// concatenated along concat_dim.
  void all_to_all(int replica, const Groups& groups, const Shape& x, int64_t split_dim, int64_t concat_dim,
                  const void* in, void* out);
  /// out: the operand of the pair's source whose target is this replica's position, or zeros.
  void collective_permute(int replica, const Groups& groups, const std::vector<std::pair<int64_t, int64_t>>& pairs,
                          const Shape& x, const void* in, void* out);

  /// Releases this process's replicas waiting in an all_reduce once one of them failed, so
  /// none waits forever for it: they throw ReplicaAborted, as do later calls until reset().
  virtual void abort() = 0;
  /// Makes the collectives usable again once every replica has left (after an abort).
  virtual void reset() = 0;
};

/// dst = blocks[0] + blocks[1] + ... of `count` elements, added in that order (a fixed order
/// keeps every replica's and every run's bits equal); f32, f64, i32 or i64.
void sum_in_order(DType dtype, const std::vector<const void*>& blocks, int64_t count, void* dst);
/// data /= divisor, element-wise (a mean after sum_in_order); f32, f64, i32 or i64.
void divide_by(DType dtype, void* data, int64_t count, int64_t divisor);

}  // namespace kiln::runtime
