// Attrs: the static attributes of an instruction. One flat struct (as XLA's HloInstruction
// holds its fields) so passes can compare and copy them uniformly; each op uses the subset
// documented below and leaves the rest at their defaults.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/core/shape.h"

namespace kiln::ir {

class Computation;

enum class Comparison : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
/// all_reduce and reduce_scatter use kSum/kMean; reduce_window and its gradient use kMax/kMean.
enum class ReduceKind : uint8_t { kSum, kMean, kMax, kMin };
/// kLoop: elementwise chain; kReduction: elementwise producers feeding a reduce;
/// kOutput: a dot_general/convolution with an elementwise epilogue (bias, activation).
enum class FusionKind : uint8_t { kLoop, kReduction, kOutput };

/// dot_general: result dims are batch..., lhs free..., rhs free... (StableHLO order).
struct DotDims {
  Dims lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
  friend bool operator==(const DotDims&, const DotDims&) = default;
};

/// convolution over NHWC input and HWIO filter (TensorFlow layouts), 2 spatial dims.
struct ConvDims {
  Dims strides{1, 1};
  Dims padding_low{0, 0};
  Dims padding_high{0, 0};
  Dims dilation{1, 1};  // filter (rhs) dilation
  int64_t groups = 1;
  friend bool operator==(const ConvDims&, const ConvDims&) = default;
};

/// reduce_window over NHWC: one entry per operand dimension.
struct Window {
  Dims size, strides, padding_low, padding_high;
  friend bool operator==(const Window&, const Window&) = default;
};

struct Attrs {
  /// broadcast_in_dim: result dim of each operand dim; transpose: permutation;
  /// reduce_*: reduced axes (sorted); argmax, iota, concatenate, gather, scatter_add: {axis};
  /// all_gather, reduce_scatter: {dim}; all_to_all: {split_dim, concat_dim}.
  Dims dims;
  /// slice: start/limit/stride per dim; pad: low (starts) and high (limits) edge padding.
  Dims starts, limits, strides;
  /// pad: the padding value.
  double scalar = 0.0;
  Comparison comparison = Comparison::kEq;
  ReduceKind reduce_kind = ReduceKind::kSum;
  DotDims dot;
  ConvDims conv;
  Window window;
  /// parameter: position in the computation's parameter list.
  int64_t parameter_index = -1;
  /// constant: the value (shared, never mutated).
  HostTensor literal;
  /// fusion: the fused sub-computation (owned by the Module) and its kind; while: the loop body.
  Computation* body = nullptr;
  FusionKind fusion_kind = FusionKind::kLoop;
  /// while: carried values -> bool[] (loop again?); owned by the Module.
  Computation* condition = nullptr;
  /// while: the number of iterations when the trace knows it (a scan), else -1. Informative
  /// for the evaluator; reverse-mode autodiff needs it.
  int64_t trip_count = -1;
  /// conditional: with a bool predicate {true branch, false branch}; with an i32 index the
  /// branch it picks (an index out of range picks the last, as XLA).
  std::vector<Computation*> branches;
  /// get_tuple_element: which result of its while/conditional operand.
  int64_t tuple_index = -1;
  /// Collectives: the groups of replica ids that meet (each id in one group, all of size
  /// group_size); empty: every replica in one group.
  std::vector<Dims> replica_groups;
  /// Collectives: the replicas in each group, fixed when the op is made (the replica count the
  /// step is traced for, or the size of each replica group), since all_gather, reduce_scatter
  /// and all_to_all shapes depend on it; compiling for another replica count is a CompileError.
  /// all_reduce's result does not depend on it: 0 there means "whatever the replica count".
  int64_t group_size = 0;
  /// collective_permute: (source, target) positions in each group (replica ids without
  /// groups); a replica that is no pair's target receives zeros.
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;

  /// Equal when every field is equal; literals compare by shape and bytes.
  friend bool operator==(const Attrs& a, const Attrs& b);
};

/// The computations an instruction calls (fusion body, while condition and body, branches).
std::vector<Computation*> called_computations(const Attrs& attrs);

std::string_view comparison_name(Comparison c);
std::string_view reduce_kind_name(ReduceKind k);
std::string_view fusion_kind_name(FusionKind k);

}  // namespace kiln::ir
