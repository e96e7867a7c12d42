// IR text printer.
#include "kiln/ir/printer.h"

#include <sstream>
#include <unordered_map>

#include "kiln/core/dtype_dispatch.h"
#include "kiln/ir/collectives.h"

namespace kiln::ir {
namespace {

std::string list(const Dims& d) { return str_cat("{", str_join(d), "}"); }

std::string literal_text(const HostTensor& t) {
  constexpr int64_t kMaxShown = 8;
  if (t.num_elements() > kMaxShown) return "{...}";
  std::ostringstream os;
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(t.raw_data());
    if (t.rank() > 0) os << "{";
    for (int64_t i = 0; i < t.num_elements(); ++i) os << (i ? ", " : "") << to_double(p[i]);
    if (t.rank() > 0) os << "}";
  });
  return os.str();
}

// A collective's replica groups, when it has any (none: every replica in one group).
std::string groups_text(const Attrs& a) {
  if (a.replica_groups.empty()) return "";
  return str_cat(", replica_groups=", replica_groups_text(a.replica_groups));
}

std::string attrs_text(const Instruction& inst) {
  const Attrs& a = inst.attrs();
  switch (inst.opcode()) {
    case Opcode::kParameter:
      return inst.name().empty() ? "" : str_cat(" \"", inst.name(), "\"");
    case Opcode::kCompare:
      return str_cat(", direction=", comparison_name(a.comparison));
    case Opcode::kIota: case Opcode::kConcatenate: case Opcode::kGather: case Opcode::kScatterAdd:
    case Opcode::kArgmax:
      return str_cat(", axis=", a.dims.at(0));
    case Opcode::kBroadcastInDim:
      return str_cat(", dims=", list(a.dims));
    case Opcode::kTranspose:
      return str_cat(", permutation=", list(a.dims));
    case Opcode::kReduceSum: case Opcode::kReduceMax: case Opcode::kReduceMin:
      return str_cat(", axes=", list(a.dims));
    case Opcode::kSlice:
      return str_cat(", starts=", list(a.starts), ", limits=", list(a.limits), ", strides=", list(a.strides));
    case Opcode::kPad:
      return str_cat(", low=", list(a.starts), ", high=", list(a.limits), ", value=", a.scalar);
    case Opcode::kDotGeneral: {
      std::string s;
      if (!a.dot.lhs_batch.empty())
        s = str_cat(", lhs_batch=", list(a.dot.lhs_batch), ", rhs_batch=", list(a.dot.rhs_batch));
      return str_cat(s, ", lhs_contracting=", list(a.dot.lhs_contracting),
                     ", rhs_contracting=", list(a.dot.rhs_contracting));
    }
    case Opcode::kConvolution: case Opcode::kConvBackwardInput: case Opcode::kConvBackwardFilter:
      return str_cat(", strides=", list(a.conv.strides), ", padding_low=", list(a.conv.padding_low),
                     ", padding_high=", list(a.conv.padding_high), ", dilation=", list(a.conv.dilation),
                     ", groups=", a.conv.groups);
    case Opcode::kReduceWindow: case Opcode::kReduceWindowGrad:
      return str_cat(", kind=", reduce_kind_name(a.reduce_kind), ", size=", list(a.window.size),
                     ", strides=", list(a.window.strides), ", padding_low=", list(a.window.padding_low),
                     ", padding_high=", list(a.window.padding_high));
    case Opcode::kAllReduce:
      return str_cat(", kind=", reduce_kind_name(a.reduce_kind), groups_text(a));
    case Opcode::kAllGather:
      return str_cat(", dim=", a.dims.at(0), ", group_size=", a.group_size, groups_text(a));
    case Opcode::kReduceScatter:
      return str_cat(", kind=", reduce_kind_name(a.reduce_kind), ", dim=", a.dims.at(0), ", group_size=", a.group_size,
                     groups_text(a));
    case Opcode::kAllToAll:
      return str_cat(", split_dim=", a.dims.at(0), ", concat_dim=", a.dims.at(1), ", group_size=", a.group_size,
                     groups_text(a));
    case Opcode::kCollectivePermute:
      return str_cat(", pairs=", pairs_text(a.source_target_pairs), ", group_size=", a.group_size, groups_text(a));
    case Opcode::kFusion:
      return str_cat(", kind=", fusion_kind_name(a.fusion_kind), ", calls=",
                     a.body != nullptr ? a.body->name() : "?");
    case Opcode::kDynamicSlice:
      return str_cat(", sizes=", list(a.limits));
    case Opcode::kWhile:
      return str_cat(", condition=", a.condition != nullptr ? a.condition->name() : "?",
                     ", body=", a.body != nullptr ? a.body->name() : "?",
                     a.trip_count >= 0 ? str_cat(", trip_count=", a.trip_count) : "");
    case Opcode::kConditional: {
      std::vector<std::string> names;
      for (const Computation* b : a.branches) names.push_back(b != nullptr ? b->name() : "?");
      return str_cat(", branches={", str_join(names, ", "), "}");
    }
    case Opcode::kGetTupleElement:
      return str_cat(", index=", a.tuple_index);
    case Opcode::kConstant:
#include "kiln/ir/elementwise_cases.inc"
    case Opcode::kConvert: case Opcode::kSelect: case Opcode::kReshape: case Opcode::kDynamicUpdateSlice:
    case Opcode::kRngBits:
      return "";
  }
  return "";
}

std::string rhs(const Instruction& inst, const std::unordered_map<const Instruction*, int>* numbers) {
  std::ostringstream os;
  os << inst.shape() << " " << opcode_name(inst.opcode()) << "(";
  if (inst.opcode() == Opcode::kParameter) os << inst.attrs().parameter_index;
  if (inst.opcode() == Opcode::kConstant) os << literal_text(inst.attrs().literal);
  for (size_t i = 0; i < inst.operands().size(); ++i) {
    const Instruction* op = inst.operands()[i];
    int n = numbers != nullptr ? numbers->at(op) : op->id();
    os << (i ? ", " : "") << "%" << n;
  }
  os << ")" << attrs_text(inst);
  return os.str();
}

void print_computation(std::ostringstream& os, const Computation& c, const PrintOptions& options) {
  std::unordered_map<const Instruction*, int> numbers;
  os << c.name() << " {\n";
  for (Instruction* inst : c.post_order()) {
    int n = static_cast<int>(numbers.size());
    numbers[inst] = n;
    os << "  %" << n << " = " << rhs(*inst, &numbers);
    if (options.show_sources && !inst->source().empty()) os << "  # " << inst->source();
    os << "\n";
  }
  os << "  outputs(";
  for (size_t i = 0; i < c.outputs().size(); ++i) os << (i ? ", " : "") << "%" << numbers.at(c.outputs()[i]);
  os << ")\n}\n";
}

}  // namespace

std::string describe(const Instruction& instruction) { return rhs(instruction, nullptr); }

std::string to_string(const Computation& computation, PrintOptions options) {
  std::ostringstream os;
  print_computation(os, computation, options);
  return os.str();
}

std::string to_string(const Module& module, PrintOptions options) {
  std::ostringstream os;
  os << "module @" << module.name() << "\n";
  for (size_t i = 1; i < module.computations().size(); ++i)
    print_computation(os, *module.computations()[i], options);
  print_computation(os, *module.entry(), options);
  if (!module.aliases().empty()) {
    os << "aliases(";
    for (size_t i = 0; i < module.aliases().size(); ++i)
      os << (i ? ", " : "") << "output " << module.aliases()[i].output_index << " -> parameter "
         << module.aliases()[i].parameter_index;
    os << ")\n";
  }
  return os.str();
}

}  // namespace kiln::ir
