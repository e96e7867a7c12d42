// The GPU lowering's collectives (Lowerer, cuda_lowerer_impl.h) on NCCL, on the compute stream:
// all_reduce (ncclAllReduce), all_gather (ncclAllGather), reduce_scatter (ncclReduceScatter),
// all_to_all and collective_permute (grouped ncclSend/ncclRecv). With one replica each is a
// copy (a permutation to nowhere: zeros). NCCL lays replicas' blocks along the leading dims
// only, and its communicators span every replica: a collective along an inner dim, or over
// replica groups, is refused with the reason (a CompileError, as any op the GPU cannot run).
#include "kiln/ir/collectives.h"
#include "kiln/ir/printer.h"
#include "kiln/runtime/cuda/cuda_lowerer_impl.h"

namespace kiln::cuda::lowering {
namespace {

// The elements before dim d of `s`: 1 when x's blocks along d are contiguous.
int64_t leading(const Shape& s, int64_t d) {
  int64_t n = 1;
  for (int64_t i = 0; i < d; ++i) n *= s.dims()[static_cast<size_t>(i)];
  return n;
}

}  // namespace

int64_t Lowerer::collective_replicas(const Instruction& inst) const {
  const int64_t replicas = options_.collectives ? options_.collectives->num_replicas() : 1;
  const ir::Attrs& a = inst.attrs();
  if (std::string error = ir::replica_groups_error(a.replica_groups, a.group_size, replicas); !error.empty())
    KILN_THROW(CompileError, "[cuda] ", ir::describe(inst), ": ", error, ".");
  return replicas;
}

NcclCollectives* Lowerer::nccl_for(const Instruction& inst) {
  auto* nccl = dynamic_cast<NcclCollectives*>(options_.collectives.get());
  const int replicas = options_.collectives->num_replicas();
  if (nccl == nullptr) {
    why_ = str_cat(replicas, " replicas over host collectives: GPU replicas reduce with NCCL (make_nccl_collectives)");
    return nullptr;
  }
  if (!inst.attrs().replica_groups.empty()) {
    why_ = str_cat("NCCL over replica groups ", ir::replica_groups_text(inst.attrs().replica_groups),
                   " needs a communicator per group, which the cuda backend does not make");
    return nullptr;
  }
  const int replica = options_.replica_id;
  if (device_ != nullptr && nccl->ordinal(replica) != device_->ordinal()) {
    why_ = str_cat("replica ", replica, " is on cuda:", nccl->ordinal(replica), ", not ", device_->name());
    return nullptr;
  }
  return nccl;
}

void Lowerer::add_nccl_step(const Instruction& inst, std::string label, NcclCollectives* nccl,
                            std::function<void(CUstream, CUdeviceptr, CUdeviceptr)> run) {
  std::shared_ptr<runtime::Collectives> keep = options_.collectives;
  emit({std::move(label), operand_values(inst), {value_.at(&inst)},
        [keep, run = std::move(run)](CUstream s, const CUdeviceptr* in, const CUdeviceptr* out, CUdeviceptr) {
          run(s, in[0], out[0]);
        }});
  exe_.add_finish_check([nccl, keep] { nccl->throw_if_aborted(); });
}

bool Lowerer::all_reduce(const Instruction& inst) {
  // One replica: the sum and the mean are the value itself.
  if (collective_replicas(inst) <= 1) return add_copy(inst, "all_reduce(1 replica)");
  return add_nccl_all_reduce(inst);
}

bool Lowerer::add_nccl_all_reduce(const Instruction& inst) {
  NcclCollectives* nccl = nccl_for(inst);
  if (nccl == nullptr) return false;
  const int replicas = options_.collectives->num_replicas();
  const int replica = options_.replica_id;
  const DType dtype = inst.dtype();
  const ir::ReduceKind kind = inst.attrs().reduce_kind;
  if (!NcclCollectives::supports(kind, dtype)) {
    why_ = str_cat("NCCL has no ", ir::reduce_kind_name(kind), " of ", name(dtype));
    return false;
  }
  if (!add_copy(inst, "copy(all_reduce operand)")) return false;
  const int64_t count = inst.shape().num_elements();
  std::shared_ptr<runtime::Collectives> keep = options_.collectives;
  emit({str_cat("all_reduce(nccl, ", replicas, " replicas, ", ir::reduce_kind_name(kind), ", ", count, " ", name(dtype), ")"),
                 {value_.at(&inst)}, {value_.at(&inst)},
                 [nccl, keep, replica, count, dtype, kind](CUstream s, const CUdeviceptr*, const CUdeviceptr* out, CUdeviceptr) {
                   if (count > 0) nccl->all_reduce_on_device(replica, s, out[0], count, dtype, kind);
                 }});
  exe_.add_finish_check([nccl, keep] { nccl->throw_if_aborted(); });
  return true;
}

bool Lowerer::all_gather(const Instruction& inst) {
  if (collective_replicas(inst) <= 1) return add_copy(inst, "all_gather(1 replica)");
  const Shape& x = inst.operand(0)->shape();
  const int64_t dim = inst.attrs().dims[0];
  if (leading(x, dim) != 1) {
    why_ = str_cat("NCCL gathers along the leading dims only, and dim ", dim, " of ", x, " has ", leading(x, dim),
                   " elements before it");
    return false;
  }
  NcclCollectives* nccl = nccl_for(inst);
  if (nccl == nullptr) return false;
  const int replica = options_.replica_id;
  const int64_t bytes = x.byte_size();
  add_nccl_step(inst, str_cat("all_gather(nccl, ", options_.collectives->num_replicas(), " replicas)"), nccl,
                [nccl, replica, bytes](CUstream s, CUdeviceptr in, CUdeviceptr out) {
                  if (bytes > 0) nccl->all_gather_on_device(replica, s, in, out, bytes);
                });
  return true;
}

bool Lowerer::reduce_scatter(const Instruction& inst) {
  if (collective_replicas(inst) <= 1) return add_copy(inst, "reduce_scatter(1 replica)");
  const Shape& x = inst.operand(0)->shape();
  const int64_t dim = inst.attrs().dims[0];
  const ir::ReduceKind kind = inst.attrs().reduce_kind;
  if (leading(x, dim) != 1) {
    why_ = str_cat("NCCL scatters along the leading dims only, and dim ", dim, " of ", x, " has ", leading(x, dim),
                   " elements before it");
    return false;
  }
  if (!NcclCollectives::supports(kind, x.dtype())) {
    why_ = str_cat("NCCL has no ", ir::reduce_kind_name(kind), " of ", name(x.dtype()));
    return false;
  }
  NcclCollectives* nccl = nccl_for(inst);
  if (nccl == nullptr) return false;
  const int replica = options_.replica_id;
  const int64_t count = inst.shape().num_elements();
  const DType dtype = x.dtype();
  add_nccl_step(inst, str_cat("reduce_scatter(nccl, ", options_.collectives->num_replicas(), " replicas)"), nccl,
                [nccl, replica, count, dtype, kind](CUstream s, CUdeviceptr in, CUdeviceptr out) {
                  if (count > 0) nccl->reduce_scatter_on_device(replica, s, in, out, count, dtype, kind);
                });
  return true;
}

bool Lowerer::all_to_all(const Instruction& inst) {
  if (collective_replicas(inst) <= 1) return add_copy(inst, "all_to_all(1 replica)");
  const Shape& x = inst.operand(0)->shape();
  const int64_t split = inst.attrs().dims[0], concat = inst.attrs().dims[1];
  // Part j of x (contiguous when split's leading dims are 1) goes to rank j; the part from rank
  // i lands at block i of the result (contiguous when concat's leading dims are 1).
  if (leading(x, split) != 1 || leading(inst.shape(), concat) != 1) {
    why_ = str_cat("NCCL's all_to_all moves contiguous blocks: split_dim ", split, " and concat_dim ", concat, " of ", x,
                   " need no elements before them");
    return false;
  }
  NcclCollectives* nccl = nccl_for(inst);
  if (nccl == nullptr) return false;
  const int replica = options_.replica_id;
  const int replicas = options_.collectives->num_replicas();
  const int64_t part = x.byte_size() / replicas;
  add_nccl_step(inst, str_cat("all_to_all(nccl, ", replicas, " replicas)"), nccl,
                [nccl, replica, replicas, part](CUstream s, CUdeviceptr in, CUdeviceptr out) {
                  if (part == 0) return;
                  std::vector<NcclCollectives::Transfer> transfers;
                  for (int j = 0; j < replicas; ++j) {
                    transfers.push_back({.send = true, .peer = j, .data = in + static_cast<CUdeviceptr>(j * part), .bytes = part});
                    transfers.push_back({.send = false, .peer = j, .data = out + static_cast<CUdeviceptr>(j * part), .bytes = part});
                  }
                  nccl->send_recv_on_device(replica, s, transfers);
                });
  return true;
}

bool Lowerer::collective_permute(const Instruction& inst) {
  const auto& pairs = inst.attrs().source_target_pairs;
  const int64_t bytes = inst.shape().byte_size();
  const auto zeros = [bytes](CUstream s, CUdeviceptr out) {
    if (bytes > 0) check(driver().cuMemsetD8Async(out, 0, static_cast<size_t>(bytes), s), "cuMemsetD8Async (no source)");
  };
  if (collective_replicas(inst) <= 1) {
    if (!pairs.empty()) return add_copy(inst, "collective_permute(1 replica)");
    emit({"collective_permute(1 replica, zeros)", operand_values(inst), {value_.at(&inst)},
          [zeros](CUstream s, const CUdeviceptr*, const CUdeviceptr* out, CUdeviceptr) { zeros(s, out[0]); }});
    return true;
  }
  NcclCollectives* nccl = nccl_for(inst);
  if (nccl == nullptr) return false;
  const int replica = options_.replica_id;
  const int64_t me = nccl->global_replica_id(replica);
  add_nccl_step(inst, str_cat("collective_permute(nccl, ", options_.collectives->num_replicas(), " replicas)"), nccl,
                [nccl, replica, me, pairs, bytes, zeros](CUstream s, CUdeviceptr in, CUdeviceptr out) {
                  std::vector<NcclCollectives::Transfer> transfers;
                  bool receives = false;
                  for (const auto& [source, target] : pairs) {
                    if (source == me) transfers.push_back({.send = true, .peer = static_cast<int>(target), .data = in, .bytes = bytes});
                    if (target == me) {
                      transfers.push_back({.send = false, .peer = static_cast<int>(source), .data = out, .bytes = bytes});
                      receives = true;
                    }
                  }
                  if (!receives) zeros(s, out);
                  if (!transfers.empty() && bytes > 0) nccl->send_recv_on_device(replica, s, transfers);
                });
  return true;
}

}  // namespace kiln::cuda::lowering
