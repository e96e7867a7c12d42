// LoweringVisitor's dispatch: the one switch from an opcode to its handler.
#include "kiln/runtime/lowering_visitor.h"

namespace kiln::runtime {

using ir::Opcode;

bool LoweringVisitor::visit(const ir::Instruction& inst) {
  switch (inst.opcode()) {
    case Opcode::kParameter: return parameter(inst);
    case Opcode::kConstant: return constant(inst);
    case Opcode::kIota: return iota(inst);
#include "kiln/ir/elementwise_cases.inc"
    case Opcode::kConvert: case Opcode::kCompare: case Opcode::kSelect:
      return elementwise(inst);
    case Opcode::kBroadcastInDim: return broadcast_in_dim(inst);
    case Opcode::kReshape: return reshape(inst);
    case Opcode::kTranspose: return transpose(inst);
    case Opcode::kSlice: return slice(inst);
    case Opcode::kConcatenate: return concatenate(inst);
    case Opcode::kPad: return pad(inst);
    case Opcode::kGather: return gather(inst);
    case Opcode::kScatterAdd: return scatter_add(inst);
    case Opcode::kDynamicSlice: return dynamic_slice(inst);
    case Opcode::kDynamicUpdateSlice: return dynamic_update_slice(inst);
    case Opcode::kReduceSum: case Opcode::kReduceMax: case Opcode::kReduceMin: return reduce(inst);
    case Opcode::kArgmax: return argmax(inst);
    case Opcode::kDotGeneral: return dot_general(inst);
    case Opcode::kConvolution: case Opcode::kConvBackwardInput: case Opcode::kConvBackwardFilter:
      return convolution(inst);
    case Opcode::kReduceWindow: case Opcode::kReduceWindowGrad: return reduce_window(inst);
    case Opcode::kRngBits: return rng_bits(inst);
    case Opcode::kAllReduce: return all_reduce(inst);
    case Opcode::kAllGather: return all_gather(inst);
    case Opcode::kReduceScatter: return reduce_scatter(inst);
    case Opcode::kAllToAll: return all_to_all(inst);
    case Opcode::kCollectivePermute: return collective_permute(inst);
    case Opcode::kFusion: return fusion(inst);
    case Opcode::kWhile: return while_loop(inst);
    case Opcode::kConditional: return conditional(inst);
    case Opcode::kGetTupleElement: return get_tuple_element(inst);
  }
  KILN_CHECK(false, "opcode ", static_cast<int>(inst.opcode()), " is out of range");
}

}  // namespace kiln::runtime
