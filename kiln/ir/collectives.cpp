// The collectives: replica groups (the partition check and the group lookup) and shapes.
#include "kiln/ir/collectives.h"

#include <set>

#include "kiln/core/check.h"
#include "kiln/core/error.h"
#include "kiln/core/str_cat.h"

namespace kiln::ir {

std::string replica_groups_error(const std::vector<Dims>& groups, int64_t group_size) {
  if (groups.empty()) return "";
  std::set<int64_t> seen;
  for (const Dims& g : groups) {
    if (static_cast<int64_t>(g.size()) != group_size)
      return str_cat("replica_groups ", replica_groups_text(groups), " must each hold group_size=", group_size,
                     " replicas, but {", str_join(g), "} holds ", g.size());
    for (int64_t id : g) {
      if (id < 0) return str_cat("replica_groups ", replica_groups_text(groups), " name a negative replica ", id);
      if (!seen.insert(id).second)
        return str_cat("replica_groups ", replica_groups_text(groups), " name replica ", id, " twice");
    }
  }
  const int64_t n = static_cast<int64_t>(seen.size());
  if (*seen.rbegin() != n - 1)
    return str_cat("replica_groups ", replica_groups_text(groups), " must cover the replicas 0..", n - 1,
                   " exactly, but name replica ", *seen.rbegin());
  return "";
}

std::string replica_groups_error(const std::vector<Dims>& groups, int64_t group_size, int64_t num_replicas) {
  if (groups.empty()) {
    if (group_size == 0 || group_size == num_replicas) return "";
    return str_cat("it was made for ", group_size, " replicas in one group, but the step runs on ", num_replicas,
                   ". Hint: trace the step under the strategy it runs on");
  }
  std::string error = replica_groups_error(groups, group_size);
  if (!error.empty()) return error;
  const int64_t covered = static_cast<int64_t>(groups.size()) * group_size;
  if (covered != num_replicas)
    return str_cat("replica_groups ", replica_groups_text(groups), " cover ", covered, " replicas, but the step runs on ",
                   num_replicas);
  return "";
}

GroupPlace group_place(const std::vector<Dims>& groups, int64_t num_replicas, int64_t replica) {
  GroupPlace place;
  if (groups.empty()) {
    for (int64_t r = 0; r < num_replicas; ++r) place.members.push_back(r);
    place.position = replica;
    return place;
  }
  for (const Dims& g : groups)
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i] == replica) return {g, static_cast<int64_t>(i)};
  KILN_CHECK(false, "replica ", replica, " is in none of the replica groups ", replica_groups_text(groups));
}

std::string replica_groups_text(const std::vector<Dims>& groups) {
  std::vector<std::string> parts;
  for (const Dims& g : groups) parts.push_back(str_cat("{", str_join(g), "}"));
  return str_cat("{", str_join(parts), "}");
}

std::string pairs_text(const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  std::vector<std::string> parts;
  for (const auto& [s, t] : pairs) parts.push_back(str_cat("{", s, ",", t, "}"));
  return str_cat("{", str_join(parts), "}");
}

namespace {

// The dim attrs.dims[i] names (`what`: "dim", "split_dim"), checked against x's rank.
size_t collective_dim(const Shape& x, const Attrs& attrs, size_t i, const char* what, const std::string& prefix) {
  const int64_t d = attrs.dims.at(i);
  if (d < 0 || d >= x.rank())
    throw ShapeError(str_cat(prefix, what, "=", d, " is outside the dims of ", x, ": expected 0..", x.rank() - 1, "."));
  return static_cast<size_t>(d);
}

// x's dim `d` splits into group_size equal parts.
void check_divisible(const Shape& x, size_t d, int64_t group_size, const char* what, const std::string& prefix) {
  if (x.dims()[d] % group_size != 0)
    throw ShapeError(str_cat(prefix, "splits ", what, "=", d, " of ", x, " into ", group_size,
                             " equal parts (one per replica of a group), but ", x.dims()[d], " is not divisible by ",
                             group_size, "."));
}

}  // namespace

Shape collective_shape(Opcode op, const Shape& x, const Attrs& attrs, const std::string& prefix) {
  const int64_t n = attrs.group_size;
  if (n < (op == Opcode::kAllReduce ? 0 : 1))
    throw ShapeError(str_cat(prefix, "needs group_size >= 1 (the replicas in each group), received ", n, "."));
  if (n == 0 && !attrs.replica_groups.empty())
    throw ShapeError(str_cat(prefix, "replica_groups ", replica_groups_text(attrs.replica_groups),
                             " need their group_size."));
  if (std::string error = replica_groups_error(attrs.replica_groups, n); !error.empty())
    throw ShapeError(str_cat(prefix, error, "."));
  const bool reduces = op == Opcode::kAllReduce || op == Opcode::kReduceScatter;
  // all_reduce keeps the kinds it always took (min for the loss scale's all-finite flag).
  if (op == Opcode::kReduceScatter && attrs.reduce_kind != ReduceKind::kSum && attrs.reduce_kind != ReduceKind::kMean)
    throw ShapeError(str_cat(prefix, "reduces with sum or mean, received ", reduce_kind_name(attrs.reduce_kind), "."));
  if (reduces && attrs.reduce_kind == ReduceKind::kMean && !is_floating(x.dtype()))
    throw DTypeError(str_cat(prefix, "mean ", opcode_name(op), " needs a floating-point operand, received ", x, "."));
  const size_t want_dims = op == Opcode::kAllGather || op == Opcode::kReduceScatter ? 1 : op == Opcode::kAllToAll ? 2 : 0;
  if (attrs.dims.size() != want_dims)
    throw ShapeError(str_cat(prefix, "takes ", want_dims, " dims in attrs.dims, received ", dims_to_string(attrs.dims), "."));
  Dims out = x.dims();
  switch (op) {
    case Opcode::kAllGather: {
      const size_t d = collective_dim(x, attrs, 0, "dim", prefix);
      out[d] *= n;
      break;
    }
    case Opcode::kReduceScatter: {
      const size_t d = collective_dim(x, attrs, 0, "dim", prefix);
      check_divisible(x, d, n, "dim", prefix);
      out[d] /= n;
      break;
    }
    case Opcode::kAllToAll: {
      const size_t split = collective_dim(x, attrs, 0, "split_dim", prefix);
      const size_t concat = collective_dim(x, attrs, 1, "concat_dim", prefix);
      check_divisible(x, split, n, "split_dim", prefix);
      out[split] /= n;
      out[concat] *= n;
      break;
    }
    case Opcode::kCollectivePermute: {
      std::set<int64_t> sources, targets;
      for (const auto& [s, t] : attrs.source_target_pairs) {
        if (s < 0 || s >= n || t < 0 || t >= n)
          throw ShapeError(str_cat(prefix, "pair {", s, ",", t, "} of ", pairs_text(attrs.source_target_pairs),
                                   " names a replica outside 0..", n - 1, " (group_size=", n, ")."));
        if (!sources.insert(s).second)
          throw ShapeError(str_cat(prefix, "pairs ", pairs_text(attrs.source_target_pairs), " name source ", s,
                                   " twice: each replica sends to one replica at most."));
        if (!targets.insert(t).second)
          throw ShapeError(str_cat(prefix, "pairs ", pairs_text(attrs.source_target_pairs), " name target ", t,
                                   " twice: each replica receives from one replica at most."));
      }
      break;
    }
    case Opcode::kAllReduce:
      break;
#define KILN_SKIP_Collective
#include "kiln/ir/opcode_cases.inc"
      KILN_CHECK(false, opcode_name(op), " is not a collective");
  }
  return Shape(x.dtype(), out);
}

}  // namespace kiln::ir
