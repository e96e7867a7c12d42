// NcclCollectives: runtime::Collectives over NCCL communicators, one per GPU replica. Programs
// lowered by the cuda backend reduce device buffers in place on their compute stream
// (all_reduce_on_device); host values (Strategy::reduce) go through the replica's GPU.
#pragma once

#include <cuda.h>

#include <memory>
#include <mutex>
#include <vector>

#include "kiln/runtime/cuda/nccl_collectives.h"

namespace kiln::cuda {

class NcclCollectives final : public runtime::Collectives {
 public:
  /// One communicator per GPU of this process (ncclCommInitAll).
  explicit NcclCollectives(std::vector<int> ordinals);
  /// This process's cuda:`ordinal` as rank `rank` of `num_ranks` processes (ncclCommInitRank).
  NcclCollectives(int ordinal, int rank, int num_ranks, const runtime::CollectivesIdExchange& exchange);
  ~NcclCollectives() override;
  NcclCollectives(const NcclCollectives&) = delete;
  NcclCollectives& operator=(const NcclCollectives&) = delete;

  /// Replicas across every process (this process has ordinals().size() of them).
  int num_replicas() const override { return num_replicas_; }
  /// Copies `data` to replica `replica`'s GPU, reduces it there with the other replicas, and
  /// copies the result back. Every replica calls it, each on its own thread.
  void all_reduce(int replica, ir::ReduceKind kind, DType dtype, void* data, int64_t count) override;
  /// ncclCommAbort on every communicator: reductions queued or running on the GPUs end, so a
  /// replica whose peer failed before its own all_reduce is not left waiting on the GPU. Later
  /// reductions throw ReplicaAborted until reset().
  void abort() override;
  /// New communicators after an abort (ncclCommInitAll); ConfigError across processes, where
  /// the ranks cannot meet again (the job restarts).
  void reset() override;
  /// Throws ReplicaAborted after abort(): a program whose reductions were cut short checks it
  /// once its GPU work ended, so its outputs are never taken for results.
  void throw_if_aborted() const;

  /// The GPU of local replica `replica`.
  int ordinal(int replica) const { return ordinals_.at(static_cast<size_t>(replica)); }
  /// Whether NCCL reduces `dtype` with `kind` (sum or mean of a type NCCL has).
  static bool supports(ir::ReduceKind kind, DType dtype);
  /// Queues the sum (or mean) of `count` elements at `data` over every replica, in place, on
  /// `stream` of replica `replica`'s GPU (its context current). Every replica queues the same
  /// reductions in the same order, each from its own thread.
  void all_reduce_on_device(int replica, CUstream stream, CUdeviceptr data, int64_t count, DType dtype,
                            ir::ReduceKind kind) const;
  /// The replica's rank in the communicators (its id among all replicas).
  int global_replica_id(int replica) const override { return first_rank_ + replica; }
  /// ncclAllGather of `bytes` bytes per replica: `recv` gets every replica's `send` in rank order.
  void all_gather_on_device(int replica, CUstream stream, CUdeviceptr send, CUdeviceptr recv, int64_t bytes) const;
  /// ncclReduceScatter: `recv` gets this replica's `count` elements of the sum (mean) of
  /// every replica's count x replicas elements at `send`.
  void reduce_scatter_on_device(int replica, CUstream stream, CUdeviceptr send, CUdeviceptr recv, int64_t count,
                                DType dtype, ir::ReduceKind kind) const;
  /// One ncclSend or ncclRecv of `bytes` bytes with rank `peer`.
  struct Transfer {
    bool send = true;
    int peer = 0;
    CUdeviceptr data = 0;
    int64_t bytes = 0;
  };
  /// The transfers as one NCCL group (ncclGroupStart/End), so sends and receives pair up.
  void send_recv_on_device(int replica, CUstream stream, const std::vector<Transfer>& transfers) const;

 private:
  // Runs `fn(comm)` (which queues NCCL work) on the replica's communicator unless aborted (ReplicaAborted).
  template <typename Fn>
  void enqueue(int replica, Fn fn) const;

  std::vector<int> ordinals_;  // this process's GPUs
  int num_replicas_;
  int first_rank_ = 0;  // the rank of this process's first replica
  mutable std::mutex mutex_;  // orders enqueues against abort()
  bool aborted_ = false;
  std::vector<void*> comms_;  // ncclComm_t, one per local replica; null once aborted
};

}  // namespace kiln::cuda
