// InProcessCollectives: the collectives of replicas that are threads of one process. Replicas
// rendezvous; for all_reduce the last to arrive sums the buffers in replica order (0 + 1 + 2
// + ...), so the result is bit-identical run to run, optionally sums that across processes
// (MPI), and writes it back to every replica. For the exchange the other collectives are made
// of, it copies every replica's operand side by side, gathers those of the other processes
// beside them (MPI), and each replica reads what it needs.
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

  /// Gathers `bytes` bytes from every process into `out`, process by process (MPI_Allgather).
  using CrossProcessGather = std::function<void(const void* in, int64_t bytes, void* out)>;

  /// `local` replicas in this process, `total` across all processes, this being process
  /// `process` (its replicas are process * local + 0 .. local-1); `cross` and `gather` join the
  /// processes (null when total == local).
  InProcessCollectives(int local, int total, CrossProcessSum cross = nullptr, CrossProcessGather gather = nullptr,
                       int process = 0);

  int num_replicas() const override { return total_; }
  int num_local_replicas() const { return local_; }
  int global_replica_id(int replica) const override { return process_ * local_ + replica; }
  void all_reduce(int replica, ir::ReduceKind kind, DType dtype, void* data, int64_t count) override;
  void exchange(int replica, const void* in, int64_t bytes, const OfferReader& read) override;
  /// Wakes every waiting replica with ReplicaAborted; later calls throw it too, until reset().
  void abort() override;
  /// Makes the collectives usable again once every replica has left (after an abort).
  void reset() override;

 private:
  void reduce_locked(ir::ReduceKind kind, DType dtype, int64_t count);
  // Joins the rendezvous with `data`; the last to arrive runs `complete` (under the lock).
  // Returns once every local replica has arrived; ReplicaAborted if one failed.
  void rendezvous(std::unique_lock<std::mutex>& lock, int replica, void* data, int64_t count, const char* what,
                  const std::function<void()>& complete);
  void gather_locked(int64_t bytes);

  const int local_, total_, process_;
  CrossProcessSum cross_;
  CrossProcessGather gather_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<void*> buffers_;  // per replica, for the rendezvous in progress
  std::vector<std::byte> scratch_;
  // The exchange's operands, every replica's side by side (all processes'); rewritten only
  // once every local replica has arrived at the next exchange, so after all have read these.
  std::vector<std::byte> local_offers_, offers_;
  int arrived_ = 0;
  int64_t count_ = -1;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

}  // namespace kiln::distribute
