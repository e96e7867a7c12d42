// NcclCollectives: runtime::Collectives over NCCL communicators, one per GPU replica. Programs
// lowered by the cuda backend reduce device buffers in place on their compute stream
// (all_reduce_on_device); host values (Strategy::reduce) go through the replica's GPU.
#pragma once

#include <cuda.h>

#include <memory>
#include <vector>

#include "kiln/runtime/cuda/nccl_collectives.h"

namespace kiln::cuda {

class NcclCollectives final : public runtime::Collectives {
 public:
  explicit NcclCollectives(std::vector<int> ordinals);
  ~NcclCollectives() override;
  NcclCollectives(const NcclCollectives&) = delete;
  NcclCollectives& operator=(const NcclCollectives&) = delete;

  int num_replicas() const override { return static_cast<int>(ordinals_.size()); }
  /// Copies `data` to replica `replica`'s GPU, reduces it there with the other replicas, and
  /// copies the result back. Every replica calls it, each on its own thread.
  void all_reduce(int replica, ir::ReduceKind kind, DType dtype, void* data, int64_t count) override;

  /// The GPU of `replica`.
  int ordinal(int replica) const { return ordinals_.at(static_cast<size_t>(replica)); }
  /// Whether NCCL reduces `dtype` with `kind` (sum or mean of a type NCCL has).
  static bool supports(ir::ReduceKind kind, DType dtype);
  /// Queues the sum (or mean) of `count` elements at `data` over every replica, in place, on
  /// `stream` of replica `replica`'s GPU (its context current). Every replica queues the same
  /// reductions in the same order, each from its own thread.
  void all_reduce_on_device(int replica, CUstream stream, CUdeviceptr data, int64_t count, DType dtype,
                            ir::ReduceKind kind) const;

 private:
  std::vector<int> ordinals_;
  std::vector<void*> comms_;  // ncclComm_t, one per replica
};

}  // namespace kiln::cuda
