// IR predicates shared by the passes.
#include "kiln/compiler/passes/ir_patterns.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "kiln/core/dtype_dispatch.h"
#include "kiln/ir/computation.h"

namespace kiln::compiler {

using ir::Instruction;
using ir::Opcode;

std::optional<double> splat_value(const Instruction& inst) {
  if (inst.opcode() == Opcode::kBroadcastInDim) return splat_value(*inst.operand(0));
  if (inst.opcode() != Opcode::kConstant) return std::nullopt;
  const HostTensor& t = inst.attrs().literal;
  if (!t.defined() || t.num_elements() == 0) return std::nullopt;
  return visit_dtype(t.dtype(), [&](auto tag) -> std::optional<double> {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(t.raw_data());
    double first = to_double(p[0]);
    for (int64_t i = 1; i < t.num_elements(); ++i)
      if (to_double(p[i]) != first) return std::nullopt;
    return first;
  });
}

bool is_splat(const Instruction& inst, double value) {
  std::optional<double> v = splat_value(inst);
  return v.has_value() && *v == value;
}

bool is_cheap_to_duplicate(const Instruction& inst) {
  switch (inst.opcode()) {
    case Opcode::kBroadcastInDim: case Opcode::kIota: return true;
    // A convert costs one load and a conversion in each kernel that reads it; materialized once
    // it costs a buffer: under a mixed-precision policy the f32 copy of every bf16 weight
    // gradient, written and read again by the optimizer update.
    case Opcode::kConvert: return true;
    case Opcode::kConstant: return inst.shape().is_scalar();
#define KILN_SKIP_Leaf
#define KILN_SKIP_Shape
#define KILN_SKIP_Unary
#define KILN_SKIP_Binary
#include "kiln/ir/opcode_cases.inc"
#include "kiln/ir/elementwise_cases.inc"
    case Opcode::kParameter: case Opcode::kReshape: case Opcode::kTranspose: case Opcode::kSlice:
    case Opcode::kConcatenate: case Opcode::kPad:
      return false;
  }
  return false;
}

bool is_loop_fusible(const Instruction& inst) {
  return ir::is_elementwise(inst.opcode()) || is_cheap_to_duplicate(inst);
}

bool is_output(const Instruction& inst) {
  const auto& outs = inst.parent()->outputs();
  return std::find(outs.begin(), outs.end(), &inst) != outs.end();
}

bool reads_elementwise(const Instruction& consumer, size_t operand_index) {
  if (ir::is_elementwise(consumer.opcode())) return true;
  // Outside the box out[i] = x[i]; inside, x is not read at all.
  if (consumer.opcode() == Opcode::kDynamicUpdateSlice) return operand_index == 0;
  if (consumer.opcode() != Opcode::kFusion ||
      consumer.attrs().fusion_kind != ir::FusionKind::kLoop)
    return false;
  const ir::Computation* body = consumer.attrs().body;
  if (body == nullptr || operand_index >= body->parameters().size()) return false;
  // Every instruction downstream of the parameter must keep the index (a broadcast or
  // anything else in between would make output i read another element of it).
  std::vector<const Instruction*> stack{body->parameter(operand_index)};
  std::unordered_set<const Instruction*> seen;
  while (!stack.empty()) {
    const Instruction* inst = stack.back();
    stack.pop_back();
    for (const Instruction* user : inst->users()) {
      if (!ir::is_elementwise(user->opcode())) return false;
      if (seen.insert(user).second) stack.push_back(user);
    }
  }
  return true;
}

}  // namespace kiln::compiler
