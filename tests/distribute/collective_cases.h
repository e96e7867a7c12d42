// The collectives one step applies on N replicas and the results each replica must get,
// computed by hand from replica r's x ([N, 2], x_r[i][j] = 100r + 10i + j, so every value
// names the replica and row it came from). Shared by the logical-device test and the MPI driver.
#pragma once

#include <utility>
#include <vector>

#include "kiln/trace/ops/collective.h"

namespace kiln::testing {

inline float collective_x_at(int r, int64_t i, int64_t j) { return static_cast<float>(100 * r + 10 * i + j); }

inline HostTensor collective_x(int n, int r) {
  HostTensor t(Shape(DType::kF32, {n, 2}));
  auto d = t.data<float>();
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < 2; ++j) d[static_cast<size_t>(2 * i + j)] = collective_x_at(r, i, j);
  return t;
}

/// The ring s -> s+1 (mod n).
inline std::vector<std::pair<int64_t, int64_t>> ring_pairs(int n) {
  std::vector<std::pair<int64_t, int64_t>> ring;
  for (int s = 0; s < n; ++s) ring.emplace_back(s, (s + 1) % n);
  return ring;
}

/// One axis of a 2x2 mesh ({0,2}, {1,3}) with 4 replicas; every replica alone otherwise.
inline ReplicaGroups mesh_axis_groups(int n) {
  if (n == 4) return {{0, 2}, {1, 3}};
  ReplicaGroups alone;
  for (int r = 0; r < n; ++r) alone.push_back({r});
  return alone;
}

/// all_gather(x, 0), reduce_scatter(sum, 0), all_to_all(0, 1), the ring's permutation, and
/// over mesh_axis_groups: all_reduce(sum) and reduce_scatter(mean, 1).
inline std::vector<Tensor> apply_collectives(const Tensor& x, int n) {
  const ReplicaGroups groups = mesh_axis_groups(n);
  return {all_gather(x, 0), reduce_scatter(x, ir::ReduceKind::kSum, 0), all_to_all(x, 0, 1),
          collective_permute(x, ring_pairs(n)), all_reduce(x, ir::ReduceKind::kSum, groups),
          reduce_scatter(x, ir::ReduceKind::kMean, 1, groups)};
}
inline const char* const kCollectiveNames[] = {"all_gather", "reduce_scatter", "all_to_all", "collective_permute",
                                               "all_reduce over groups", "reduce_scatter over groups"};

/// What replica r of n gets from apply_collectives, output by output.
inline std::vector<std::vector<float>> expected_collectives(int n, int r) {
  std::vector<std::vector<float>> out(6);
  for (int s = 0; s < n; ++s)  // every replica's rows, in replica order
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < 2; ++j) out[0].push_back(collective_x_at(s, i, j));
  for (int j = 0; j < 2; ++j) {  // row r of the sum over replicas
    float sum = 0;
    for (int s = 0; s < n; ++s) sum += collective_x_at(s, r, j);
    out[1].push_back(sum);
  }
  for (int s = 0; s < n; ++s)  // row r of every replica, side by side
    for (int j = 0; j < 2; ++j) out[2].push_back(collective_x_at(s, r, j));
  const int from = (r + n - 1) % n;              // the ring sends r-1 to r
  const bool paired = n == 4;                     // groups {0,2}, {1,3}; else alone
  const int partner = paired ? (r + 2) % 4 : r;
  const int position = paired ? r / 2 : 0;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < 2; ++j) {
      out[3].push_back(collective_x_at(from, i, j));
      out[4].push_back(collective_x_at(r, i, j) + (paired ? collective_x_at(partner, i, j) : 0.f));
      // A group of 2 keeps column `position` of the mean; a group of one keeps x.
      if (!paired) out[5].push_back(collective_x_at(r, i, j));
    }
    if (paired) out[5].push_back((collective_x_at(r, i, position) + collective_x_at(partner, i, position)) / 2);
  }
  return out;
}

}  // namespace kiln::testing
