// The collectives' attributes (attrs.replica_groups, attrs.group_size, the dims and pairs):
// checking replica groups, finding a replica's group, and each collective's shape rule. Shape
// inference checks the groups alone; a backend checks them again against the replica count it
// compiles for.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/core/shape.h"
#include "kiln/ir/attrs.h"
#include "kiln/ir/opcode.h"

namespace kiln::ir {

/// Why `groups` are not a partition of the ids 0..n-1 into groups of `group_size` (each id
/// once, every group that size), or "" when they are. Empty groups are always valid.
std::string replica_groups_error(const std::vector<Dims>& groups, int64_t group_size);
/// As replica_groups_error, and also why they do not cover exactly `num_replicas` replicas
/// (empty groups: why group_size is not num_replicas; a group_size of 0 matches any count).
std::string replica_groups_error(const std::vector<Dims>& groups, int64_t group_size, int64_t num_replicas);

/// A replica's group: its members in group order and the replica's position among them.
struct GroupPlace {
  Dims members;
  int64_t position = 0;
};
/// The group of `replica` (groups already checked); empty groups: all of 0..num_replicas-1.
GroupPlace group_place(const std::vector<Dims>& groups, int64_t num_replicas, int64_t replica);

/// "{{0,1},{2,3}}" and "{{0,1},{1,0}}" for messages and IR text.
std::string replica_groups_text(const std::vector<Dims>& groups);
std::string pairs_text(const std::vector<std::pair<int64_t, int64_t>>& pairs);

/// The result shape of a collective (all_reduce, all_gather, reduce_scatter, all_to_all,
/// collective_permute) on `x`; ShapeError/DTypeError starting with `prefix` ("[all_gather] ")
/// saying what is wrong.
Shape collective_shape(Opcode op, const Shape& x, const Attrs& attrs, const std::string& prefix);

}  // namespace kiln::ir
