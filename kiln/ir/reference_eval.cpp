// The reference evaluator's driver: binds arguments, walks a computation in post order, and
// dispatches each opcode to its family (reference_eval_<family>.cpp). Also holds the small ops:
// constant, rng_bits and fusion (the collectives are reference_eval_collective.cpp's).
#include "kiln/ir/reference_eval.h"

#include <unordered_map>

#include "kiln/core/rng.h"
#include "kiln/ir/reference_eval_impl.h"

namespace kiln::ir {
namespace ref {

Dims strides_of(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

DType compute_dtype(DType t) {
  return t == DType::kBF16 || t == DType::kF16 ? DType::kF32 : t;
}

HostTensor widen(const HostTensor& t) { return t.astype(compute_dtype(t.dtype())); }

namespace {

// Philox-4x32-10 bits for every element (kiln/core/rng.h defines the key/counter layout).
HostTensor rng_bits(const Instruction& inst, const HostTensor& key) {
  const int64_t k = key.data<int64_t>()[0];
  HostTensor out(inst.shape());
  auto dst = out.data<int32_t>();
  for (size_t i = 0; i < dst.size(); ++i)
    dst[i] = static_cast<int32_t>(philox_element_bits(k, static_cast<int64_t>(i)));
  return out;
}

HostTensor fusion(const Instruction& inst, std::span<const HostTensor> args) {
  const Computation* body = inst.attrs().body;
  KILN_CHECK(body != nullptr, "fusion %", inst.id(), " has no body");
  KILN_CHECK(body->outputs().size() == 1, "fusion body ", body->name(), " has ",
             body->outputs().size(), " outputs, expected 1");
  return evaluate(*body, args)[0];
}

}  // namespace
}  // namespace ref

HostTensor evaluate_instruction(const Instruction& inst, std::span<const HostTensor> args) {
  const int arity = opcode_arity(inst.opcode());
  KILN_CHECK(arity < 0 || static_cast<int>(args.size()) == arity, opcode_name(inst.opcode()),
             " got ", args.size(), " operand values");
  switch (inst.opcode()) {
    case Opcode::kParameter:
      KILN_CHECK(false, "parameter %", inst.id(), " has no value of its own; bind it with evaluate()");
    case Opcode::kConstant:
      return inst.attrs().literal.clone();
    case Opcode::kIota:
      return ref::eval_iota(inst);
#define KILN_UNARY(N, ...) case Opcode::k##N:
#define KILN_BINARY(N, ...) case Opcode::k##N:
#include "kiln/ir/elementwise.def"
#undef KILN_UNARY
#undef KILN_BINARY
    case Opcode::kCompare: case Opcode::kSelect:
      return ref::eval_elementwise(inst, args);
    case Opcode::kConvert:
      return ref::eval_convert(inst, args[0]);
    case Opcode::kBroadcastInDim: case Opcode::kReshape: case Opcode::kTranspose: case Opcode::kSlice:
    case Opcode::kConcatenate: case Opcode::kPad:
      return ref::eval_shape_op(inst, args);
    case Opcode::kGather:
      return ref::eval_gather(inst, args[0], args[1]);
    case Opcode::kScatterAdd:
      return ref::eval_scatter_add(inst, args);
    case Opcode::kDynamicSlice: case Opcode::kDynamicUpdateSlice:
      return ref::eval_dynamic_slice(inst, args);
    case Opcode::kReduceSum: case Opcode::kReduceMax: case Opcode::kReduceMin:
      return ref::eval_reduce(inst, args[0]);
    case Opcode::kArgmax:
      return ref::eval_argmax(inst, args[0]);
    case Opcode::kDotGeneral:
      return ref::eval_dot_general(inst, args[0], args[1]);
    case Opcode::kConvolution: case Opcode::kConvBackwardInput: case Opcode::kConvBackwardFilter:
      return ref::eval_convolution(inst, args[0], args[1]);
    case Opcode::kReduceWindow:
      return ref::eval_reduce_window(inst, args[0]);
    case Opcode::kReduceWindowGrad:
      return ref::eval_reduce_window_grad(inst, args[0], args[1]);
    case Opcode::kRngBits:
      return ref::rng_bits(inst, args[0]);
    case Opcode::kAllReduce: case Opcode::kAllGather: case Opcode::kReduceScatter: case Opcode::kAllToAll:
    case Opcode::kCollectivePermute:  // one replica alone (evaluate_replicas runs several)
      return ref::eval_collective(inst, args, 0);
    case Opcode::kFusion:
      return ref::fusion(inst, args);
    case Opcode::kWhile: case Opcode::kConditional: case Opcode::kGetTupleElement:
      KILN_CHECK(false, opcode_name(inst.opcode()), " %", inst.id(), " has no single value: evaluate its "
                 "while/conditional with evaluate_tuple (evaluate() does, for get_tuple_element)");
  }
  KILN_CHECK(false, "unhandled opcode ", opcode_name(inst.opcode()));
}

namespace ref {

// Walks `computation` in post order for each replica's bound parameters (`values[r]`), in
// lockstep: a collective combines the replicas' operands, every other op runs per replica.
// Each value is dropped after its last use so long programs stay small. Returns each
// replica's outputs.
std::vector<std::vector<HostTensor>> walk_replicas(const Computation& computation,
                                                   std::vector<std::unordered_map<const Instruction*, HostTensor>> values) {
  const size_t n = values.size();
  std::unordered_map<const Instruction*, size_t> uses_left;
  for (const Instruction* inst : computation.post_order())
    for (const Instruction* op : inst->operands()) ++uses_left[op];
  for (const Instruction* out : computation.outputs()) ++uses_left[out];

  // Results of while/conditional, read by get_tuple_element (values holds their placeholder).
  // A while or conditional runs its computations on one replica alone: a collective inside
  // one needs every replica and says so (eval_collective's replica count is 1 there).
  std::vector<std::unordered_map<const Instruction*, std::vector<HostTensor>>> tuples(n);
  std::vector<HostTensor> operand_values;
  for (const Instruction* inst : computation.post_order()) {
    if (inst->opcode() == Opcode::kParameter) continue;
    const bool collective = opcode_family(inst->opcode()) == OpFamily::Collective;
    std::vector<HostTensor> replica_operands;  // a collective's operand on each replica
    if (collective)
      for (size_t r = 0; r < n; ++r) replica_operands.push_back(values[r].at(inst->operand(0)));
    for (size_t r = 0; r < n; ++r) {
      operand_values.clear();
      for (const Instruction* op : inst->operands()) operand_values.push_back(values[r].at(op));
      HostTensor result;
      if (collective) {
        result = eval_collective(*inst, replica_operands, static_cast<int64_t>(r));
      } else if (is_tuple_op(inst->opcode())) {
        tuples[r][inst] = evaluate_tuple(*inst, operand_values);
        result = HostTensor(inst->shape());
      } else if (inst->opcode() == Opcode::kGetTupleElement) {
        result = tuples[r].at(inst->operand(0)).at(static_cast<size_t>(inst->attrs().tuple_index));
      } else {
        result = evaluate_instruction(*inst, operand_values);
      }
      KILN_CHECK(result.shape() == inst->shape(), "reference result of ", opcode_name(inst->opcode()),
                 " is ", result.shape(), ", instruction says ", inst->shape());
      values[r][inst] = std::move(result);
    }
    for (const Instruction* op : inst->operands())
      if (--uses_left[op] == 0)
        for (size_t r = 0; r < n; ++r) {
          values[r].erase(op);
          tuples[r].erase(op);
        }
  }
  std::vector<std::vector<HostTensor>> outputs(n);
  for (size_t r = 0; r < n; ++r)
    for (const Instruction* out : computation.outputs()) {
      const HostTensor& v = values[r].at(out);
      outputs[r].push_back(out->opcode() == Opcode::kParameter ? v.clone() : v);
    }
  return outputs;
}

}  // namespace ref

std::vector<HostTensor> evaluate(const Computation& computation,
                                 std::span<const HostTensor> arguments) {
  const auto& params = computation.parameters();
  if (arguments.size() != params.size())
    KILN_THROW(ShapeError, "[evaluate ", computation.name(), "] expected ", params.size(),
               " arguments, received ", arguments.size(), ".");
  std::vector<std::unordered_map<const Instruction*, HostTensor>> values(1);
  for (size_t i = 0; i < params.size(); ++i) {
    if (!arguments[i].defined() || !(arguments[i].shape() == params[i]->shape()))
      KILN_THROW(ShapeError, "[evaluate ", computation.name(), "] argument ", i, " (\"",
                 params[i]->name(), "\") must be ", params[i]->shape(), ", received ",
                 arguments[i].defined() ? str_cat(arguments[i].shape()) : "an undefined tensor", ".");
    values[0][params[i]] = arguments[i];
  }
  return std::move(ref::walk_replicas(computation, std::move(values))[0]);
}

std::vector<HostTensor> evaluate(const Module& module, std::span<const HostTensor> arguments) {
  return evaluate(*module.entry(), arguments);
}

}  // namespace kiln::ir
