// The reference evaluator's collectives, and evaluate_replicas: several replicas of one program
// evaluated in lockstep, each collective combining their values. Obviously correct on
// HostTensors (slices and concatenations of bytes), never fast. Sums run in group order in the
// operand's compute type, as the runtime's collectives do, so a backend matches them bit for bit.
#include <cstring>
#include <unordered_map>

#include "kiln/ir/collectives.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/ir/reference_eval_impl.h"

namespace kiln::ir {
namespace ref {
namespace {

// x's bytes seen as [outer, dims[d] * inner] rows: the row count and one row's bytes per index of d.
struct Split {
  int64_t outer = 1, inner_bytes = 1;
};
Split split_at(const Shape& s, size_t d) {
  Split p;
  p.inner_bytes = static_cast<int64_t>(size_of(s.dtype()));
  for (size_t i = 0; i < s.dims().size(); ++i) {
    if (i < d) p.outer *= s.dims()[i];
    if (i > d) p.inner_bytes *= s.dims()[i];
  }
  return p;
}

// Part `part` of `parts` equal parts of x along d.
HostTensor slice_along(const HostTensor& x, size_t d, int64_t part, int64_t parts) {
  Dims dims = x.shape().dims();
  const int64_t len = dims[d] / parts;
  dims[d] = len;
  HostTensor out(Shape(x.dtype(), dims));
  const Split p = split_at(x.shape(), d);
  const int64_t row = len * p.inner_bytes;
  const auto* src = static_cast<const std::byte*>(x.raw_data());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  for (int64_t o = 0; o < p.outer; ++o)
    std::memcpy(dst + o * row, src + (o * parts + part) * row, static_cast<size_t>(row));
  return out;
}

// xs (equal shapes) concatenated along d.
HostTensor concat_along(const std::vector<HostTensor>& xs, size_t d) {
  Dims dims = xs[0].shape().dims();
  dims[d] *= static_cast<int64_t>(xs.size());
  HostTensor out(Shape(xs[0].dtype(), dims));
  const Split p = split_at(xs[0].shape(), d);
  const int64_t row = xs[0].shape().dims()[d] * p.inner_bytes;
  auto* dst = static_cast<std::byte*>(out.raw_data());
  for (int64_t o = 0; o < p.outer; ++o)
    for (size_t i = 0; i < xs.size(); ++i)
      std::memcpy(dst + (o * static_cast<int64_t>(xs.size()) + static_cast<int64_t>(i)) * row,
                  static_cast<const std::byte*>(xs[i].raw_data()) + o * row, static_cast<size_t>(row));
  return out;
}

// The sum (mean, max, min) of xs in order, in their compute type.
HostTensor reduce_in_order(const std::vector<HostTensor>& xs, ReduceKind kind) {
  const Shape& shape = xs[0].shape();
  return visit_compute_dtype(compute_dtype(shape.dtype()), [&](auto tag) {
    using C = typename decltype(tag)::type;
    std::vector<C> acc = widen(xs[0]).to_vector<C>();
    for (size_t r = 1; r < xs.size(); ++r) {
      const std::vector<C> v = widen(xs[r]).to_vector<C>();
      for (size_t i = 0; i < acc.size(); ++i) {
        const C a = acc[i], b = v[i];
        if (kind == ReduceKind::kMax) acc[i] = nan_max<C>(a, b);
        else if (kind == ReduceKind::kMin) acc[i] = nan_min<C>(a, b);
        else acc[i] = static_cast<C>(a + b);
      }
    }
    if (kind == ReduceKind::kMean)
      for (size_t i = 0; i < acc.size(); ++i) acc[i] = static_cast<C>(acc[i] / static_cast<C>(xs.size()));
    return tensor_from(acc, shape);
  });
}

}  // namespace

HostTensor eval_collective(const Instruction& inst, std::span<const HostTensor> replicas, int64_t replica) {
  const Attrs& a = inst.attrs();
  const int64_t n = static_cast<int64_t>(replicas.size());
  if (std::string error = replica_groups_error(a.replica_groups, a.group_size, n); !error.empty())
    KILN_THROW(CompileError, "[reference/", opcode_name(inst.opcode()), "] ", error,
               ". Hint: evaluate a program of several replicas with evaluate_replicas.");
  const GroupPlace place = group_place(a.replica_groups, n, replica);
  std::vector<HostTensor> group;
  for (int64_t m : place.members) group.push_back(replicas[static_cast<size_t>(m)]);
  const int64_t k = static_cast<int64_t>(group.size());
  switch (inst.opcode()) {
    case Opcode::kAllReduce:
      return reduce_in_order(group, a.reduce_kind);
    case Opcode::kAllGather:
      return concat_along(group, static_cast<size_t>(a.dims[0]));
    case Opcode::kReduceScatter:
      return slice_along(reduce_in_order(group, a.reduce_kind), static_cast<size_t>(a.dims[0]), place.position, k);
    case Opcode::kAllToAll: {
      std::vector<HostTensor> received;
      for (const HostTensor& x : group) received.push_back(slice_along(x, static_cast<size_t>(a.dims[0]), place.position, k));
      return concat_along(received, static_cast<size_t>(a.dims[1]));
    }
    case Opcode::kCollectivePermute:
      for (const auto& [source, target] : a.source_target_pairs)
        if (target == place.position) return group[static_cast<size_t>(source)].clone();
      return HostTensor::zeros(inst.shape());
#define KILN_SKIP_Collective
#include "kiln/ir/opcode_cases.inc"
      break;
  }
  KILN_CHECK(false, opcode_name(inst.opcode()), " is not a collective");
}

}  // namespace ref

std::vector<std::vector<HostTensor>> evaluate_replicas(const Computation& computation,
                                                       std::span<const std::vector<HostTensor>> arguments) {
  const size_t n = arguments.size();
  KILN_CHECK(n >= 1, "evaluate_replicas needs one argument list per replica");
  const auto& params = computation.parameters();
  std::vector<std::unordered_map<const Instruction*, HostTensor>> values(n);
  for (size_t r = 0; r < n; ++r) {
    if (arguments[r].size() != params.size())
      KILN_THROW(ShapeError, "[evaluate_replicas ", computation.name(), "] replica ", r, " has ", arguments[r].size(),
                 " arguments, expected ", params.size(), ".");
    for (size_t i = 0; i < params.size(); ++i) {
      if (!arguments[r][i].defined() || !(arguments[r][i].shape() == params[i]->shape()))
        KILN_THROW(ShapeError, "[evaluate_replicas ", computation.name(), "] replica ", r, "'s argument ", i,
                   " must be ", params[i]->shape(), ".");
      values[r][params[i]] = arguments[r][i];
    }
  }
  return ref::walk_replicas(computation, std::move(values));
}

}  // namespace kiln::ir
