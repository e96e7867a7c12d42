// batch_module: one pass over the element program in order, mapping each instruction to its
// batched form (or to a copy, when no operand is batched). Batched values carry the batch as
// their dimension 0, so a rule shifts every axis attribute by one and prepends the batch.
#include "kiln/trace/batching.h"

#include <unordered_map>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/core/str_cat.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/instruction.h"

namespace kiln::trace {
namespace {

Dims prepend(int64_t first, const Dims& rest) {
  Dims out{first};
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

Dims shifted(const Dims& axes) {
  Dims out;
  for (int64_t a : axes) out.push_back(a + 1);
  return out;
}

struct Value {
  ir::Instruction* inst = nullptr;
  bool batched = false;
};

class Batcher {
 public:
  Batcher(const ir::Module& element, int64_t batch_size)
      : element_(element), batch_(batch_size), out_(std::make_unique<ir::Module>(element.name() + ".batched")),
        b_(out_->entry()) {}

  std::unique_ptr<ir::Module> run(std::string* why_not) {
    const ir::Computation& entry = *element_.entry();
    for (const ir::Instruction* p : entry.parameters())
      values_[p] = {b_.parameter(Shape(p->dtype(), prepend(batch_, p->shape().dims())), p->name()), true};
    for (const ir::Instruction* inst : entry.post_order()) {
      if (inst->opcode() == ir::Opcode::kParameter) continue;
      b_.set_source(inst->source());
      if (!batch_instruction(*inst)) {
        if (why_not != nullptr)
          *why_not = str_cat("'", ir::opcode_name(inst->opcode()), "'",
                             inst->source().empty() ? "" : " (" + inst->source() + ")", " has no batching rule");
        return nullptr;
      }
    }
    for (const ir::Instruction* o : entry.outputs()) out_->entry()->add_output(batched(values_.at(o)));
    return std::move(out_);
  }

 private:
  // `v` with the batch dimension: broadcast along it when it is unbatched.
  ir::Instruction* batched(const Value& v) {
    if (v.batched) return v.inst;
    const Dims& d = v.inst->shape().dims();
    Dims where;
    for (size_t i = 0; i < d.size(); ++i) where.push_back(static_cast<int64_t>(i) + 1);
    return b_.broadcast_in_dim(v.inst, prepend(batch_, d), where);
  }

  bool batch_instruction(const ir::Instruction& inst) {
    std::vector<Value> ops;
    bool any_batched = false;
    for (const ir::Instruction* o : inst.operands()) {
      ops.push_back(values_.at(o));
      any_batched = any_batched || ops.back().batched;
    }
    const Shape result(inst.dtype(), prepend(batch_, inst.shape().dims()));
    ir::Attrs a = inst.attrs();
    auto all_batched = [&] {
      std::vector<ir::Instruction*> v;
      for (const Value& o : ops) v.push_back(batched(o));
      return v;
    };
    auto emit = [&](std::vector<ir::Instruction*> operands) {
      values_[&inst] = {b_.add(inst.opcode(), std::move(operands), std::move(a), &result), true};
      return true;
    };
    if (!any_batched) {  // a value of the constants alone: the same instruction, unbatched
      std::vector<ir::Instruction*> operands;
      for (const Value& o : ops) operands.push_back(o.inst);
      values_[&inst] = {b_.add(inst.opcode(), std::move(operands), std::move(a), &inst.shape()), false};
      return true;
    }
    if (ir::is_elementwise(inst.opcode())) return emit(all_batched());
    switch (inst.opcode()) {
      case ir::Opcode::kBroadcastInDim:
        a.dims = prepend(0, shifted(a.dims));
        return emit(all_batched());
      case ir::Opcode::kReshape:
        return emit(all_batched());
      case ir::Opcode::kTranspose:
        a.dims = prepend(0, shifted(a.dims));
        return emit(all_batched());
      case ir::Opcode::kSlice: {
        const size_t rank = inst.operand(0)->shape().dims().size();
        if (a.strides.empty()) a.strides.assign(rank, 1);
        a.starts = prepend(0, a.starts);
        a.limits = prepend(batch_, a.limits);
        a.strides = prepend(1, a.strides);
        return emit(all_batched());
      }
      case ir::Opcode::kPad:
        a.starts = prepend(0, a.starts);
        a.limits = prepend(0, a.limits);
        return emit(all_batched());
      case ir::Opcode::kConcatenate:
      case ir::Opcode::kReduceSum:
      case ir::Opcode::kReduceMax:
      case ir::Opcode::kReduceMin:
      case ir::Opcode::kArgmax:
        a.dims = shifted(a.dims);
        return emit(all_batched());
#define KILN_SKIP_Shape
#define KILN_SKIP_Reduce
#include "kiln/ir/opcode_cases.inc"
        return false;
    }
    return false;
  }

  const ir::Module& element_;
  int64_t batch_;
  std::unique_ptr<ir::Module> out_;
  ir::Builder b_;
  std::unordered_map<const ir::Instruction*, Value> values_;
};

}  // namespace

std::unique_ptr<ir::Module> batch_module(const ir::Module& element, int64_t batch_size, std::string* why_not) {
  KILN_CHECK(batch_size > 0, "batch_module needs a positive batch size, received ", batch_size);
  KILN_CHECK(element.aliases().empty(), "batch_module: '", element.name(), "' updates variables");
  return Batcher(element, batch_size).run(why_not);
}

}  // namespace kiln::trace
