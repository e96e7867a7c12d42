// VJP rules of the collectives. Each is the transpose of a linear map across the replicas, so
// every replica's cotangent comes from one collective over the replicas' output cotangents
// (the same groups): all_gather <-> reduce_scatter(sum), all_to_all with its dims swapped,
// collective_permute with its pairs reversed.
#include "kiln/trace/emit.h"
#include "kiln/trace/vjp/vjp.h"

namespace kiln::trace {
namespace {

using ir::Opcode;

// The cotangent through `op` with the forward's groups and group size, and `set` applied.
template <typename Set>
Tensor transpose_with(Opcode op, const VjpArgs& a, Set set) {
  ir::Attrs attrs;
  attrs.replica_groups = a.attrs.replica_groups;
  attrs.group_size = a.attrs.group_size;
  set(attrs);
  return emit(op, {a.g()}, attrs);
}

const VjpEntry kTable[] = {
    // d/dx_r all_reduce(sum) = all_reduce(sum) of the replicas' cotangents (mean: mean)
    {Opcode::kAllReduce,
     [](const VjpArgs& a) -> Grads { return {emit(Opcode::kAllReduce, {a.g()}, a.attrs)}; }},
    // x_r is block r of every replica's output: its cotangent is the sum of those blocks
    {Opcode::kAllGather,
     [](const VjpArgs& a) -> Grads {
       return {transpose_with(Opcode::kReduceScatter, a, [&](ir::Attrs& t) {
         t.reduce_kind = ir::ReduceKind::kSum;
         t.dims = a.attrs.dims;
       })};
     }},
    // y_p = (sum_r x_r)[block p] (mean: / k): x_r's cotangent is every replica's g gathered (/ k)
    {Opcode::kReduceScatter,
     [](const VjpArgs& a) -> Grads {
       Tensor g = transpose_with(Opcode::kAllGather, a, [&](ir::Attrs& t) { t.dims = a.attrs.dims; });
       if (a.attrs.reduce_kind == ir::ReduceKind::kMean) g = g / static_cast<double>(a.attrs.group_size);
       return {g};
     }},
    // all_to_all moves blocks; moving them back swaps split and concat dims
    {Opcode::kAllToAll,
     [](const VjpArgs& a) -> Grads {
       return {transpose_with(Opcode::kAllToAll, a, [&](ir::Attrs& t) { t.dims = {a.attrs.dims[1], a.attrs.dims[0]}; })};
     }},
    // the cotangent goes back from each target to its source; a source no pair names gets 0
    {Opcode::kCollectivePermute,
     [](const VjpArgs& a) -> Grads {
       return {transpose_with(Opcode::kCollectivePermute, a, [&](ir::Attrs& t) {
         for (const auto& [source, target] : a.attrs.source_target_pairs) t.source_target_pairs.emplace_back(target, source);
       })};
     }},
};

}  // namespace

std::span<const VjpEntry> collective_vjps() { return kTable; }

}  // namespace kiln::trace
