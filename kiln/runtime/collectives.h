// Collectives: how a compiled step's all_reduce instruction talks to the other replicas. The
// runtime only calls this interface; distribute/ implements it (threads of one process, MPI
// ranks, or both), so backends never know which strategy runs them.
#pragma once

#include <cstdint>

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
  /// Releases this process's replicas waiting in an all_reduce once one of them failed, so
  /// none waits forever for it: they throw ReplicaAborted, as do later calls until reset().
  virtual void abort() = 0;
  /// Makes the collectives usable again once every replica has left (after an abort).
  virtual void reset() = 0;
};

}  // namespace kiln::runtime
