// Attribute equality and names.
#include "kiln/ir/attrs.h"

#include <cstring>

namespace kiln::ir {

bool operator==(const Attrs& a, const Attrs& b) {
  if (a.dims != b.dims || a.starts != b.starts || a.limits != b.limits || a.strides != b.strides ||
      a.scalar != b.scalar || a.comparison != b.comparison || a.reduce_kind != b.reduce_kind ||
      !(a.dot == b.dot) || !(a.conv == b.conv) || !(a.window == b.window) ||
      a.parameter_index != b.parameter_index || a.body != b.body ||
      a.fusion_kind != b.fusion_kind || a.condition != b.condition || a.trip_count != b.trip_count ||
      a.branches != b.branches || a.tuple_index != b.tuple_index || a.replica_groups != b.replica_groups ||
      a.group_size != b.group_size || a.source_target_pairs != b.source_target_pairs ||
      a.literal.defined() != b.literal.defined())
    return false;
  if (!a.literal.defined()) return true;
  return a.literal.shape() == b.literal.shape() &&
         std::memcmp(a.literal.raw_data(), b.literal.raw_data(),
                     static_cast<size_t>(a.literal.byte_size())) == 0;
}

std::vector<Computation*> called_computations(const Attrs& attrs) {
  std::vector<Computation*> out;
  if (attrs.condition != nullptr) out.push_back(attrs.condition);
  if (attrs.body != nullptr) out.push_back(attrs.body);
  for (Computation* c : attrs.branches)
    if (c != nullptr) out.push_back(c);
  return out;
}

std::string_view comparison_name(Comparison c) {
  switch (c) {
    case Comparison::kEq: return "eq";
    case Comparison::kNe: return "ne";
    case Comparison::kLt: return "lt";
    case Comparison::kLe: return "le";
    case Comparison::kGt: return "gt";
    case Comparison::kGe: return "ge";
  }
  return "?";
}

std::string_view reduce_kind_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::kSum: return "sum";
    case ReduceKind::kMean: return "mean";
    case ReduceKind::kMax: return "max";
    case ReduceKind::kMin: return "min";
  }
  return "?";
}

std::string_view fusion_kind_name(FusionKind k) {
  switch (k) {
    case FusionKind::kLoop: return "loop";
    case FusionKind::kReduction: return "reduction";
    case FusionKind::kOutput: return "output";
  }
  return "?";
}

}  // namespace kiln::ir
