// InProcessCollectives: the all_reduce of replicas that are threads of one process. Replicas
// rendezvous; the last to arrive sums the buffers in replica order (0 + 1 + 2 + ...), so the
// result is bit-identical run to run, optionally sums that across processes (MPI), and
// writes it back to every replica.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "kiln/runtime/collectives.h"

namespace kiln::distribute {

using runtime::ReplicaAborted;

class InProcessCollectives : public runtime::Collectives {
 public:
  /// Sums `count` elements of a dtype in place across processes (MPI_Allreduce).
  using CrossProcessSum = std::function<void(DType dtype, void* data, int64_t count)>;

  /// `local` replicas in this process, `total` across all processes; `cross` joins the
  /// processes (null when total == local).
  InProcessCollectives(int local, int total, CrossProcessSum cross = nullptr);

  int num_replicas() const override { return total_; }
  int num_local_replicas() const { return local_; }
  void all_reduce(int replica, ir::ReduceKind kind, DType dtype, void* data, int64_t count) override;
  /// Wakes every waiting replica with ReplicaAborted; later calls throw it too, until reset().
  void abort() override;
  /// Makes the collectives usable again once every replica has left (after an abort).
  void reset() override;

 private:
  void reduce_locked(ir::ReduceKind kind, DType dtype, int64_t count);

  const int local_, total_;
  CrossProcessSum cross_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<void*> buffers_;  // per replica, for the rendezvous in progress
  std::vector<std::byte> scratch_;
  int arrived_ = 0;
  int64_t count_ = -1;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

}  // namespace kiln::distribute
