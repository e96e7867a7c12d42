// plan_memory: liveness over the entry post order, best-fit arena offsets, in-place reuse of
// dying operands, variable donation, and the output copies that make the rest correct.
#include <algorithm>
#include <climits>
#include <map>
#include <unordered_set>

#include "kiln/compiler/arena_allocator.h"
#include "kiln/compiler/decision.h"
#include "kiln/compiler/memory_plan.h"
#include "kiln/compiler/passes/ir_patterns.h"
#include "kiln/core/check.h"
#include "kiln/ir/printer.h"

namespace kiln::compiler {

using ir::Instruction;
using ir::Opcode;

namespace {


class Planner {
 public:
  Planner(const ir::Module& module, const TargetInfo& target, bool reuse, bool f32_values_as_16bit = false)
      : module_(module), entry_(*module.entry()), target_(target), reuse_(reuse),
        f32_values_as_16bit_(f32_values_as_16bit) {}

  MemoryPlan run() {
    for (const Instruction* inst : entry_.post_order()) {
      position_[inst] = static_cast<int>(plan_.order.size());
      plan_.order.push_back(inst);
    }
    classify();
    place_outputs();
    compute_liveness();
    assign_offsets();
    return std::move(plan_);
  }

 private:
  void classify() {
    for (const Instruction* inst : plan_.order) {
      BufferInfo& b = plan_.buffers[inst];
      b.size = inst->shape().byte_size();
      switch (inst->opcode()) {
        case Opcode::kParameter:
          b.kind = BufferKind::kParameter;
          b.parameter_index = static_cast<int>(inst->attrs().parameter_index);
          plan_.argument_bytes += b.size;
          break;
        case Opcode::kConstant:
          b.kind = BufferKind::kConstant;
          plan_.constant_bytes += b.size;
          break;
        case Opcode::kReshape:  // row-major: the same bytes under new dims
          b.kind = BufferKind::kAlias;
          b.alias_of = inst->operand(0);
          break;
        // Computed values: bytes of their own in the arena.
#define KILN_SKIP_Leaf
#define KILN_SKIP_Shape
#include "kiln/ir/opcode_cases.inc"
        case Opcode::kIota: case Opcode::kBroadcastInDim: case Opcode::kTranspose: case Opcode::kSlice:
        case Opcode::kConcatenate: case Opcode::kPad:
          b.kind = BufferKind::kArena;
          if (f32_values_as_16bit_ && inst->dtype() == DType::kF32) b.size = inst->shape().num_elements() * 2;
      }
    }
  }

  // Every instruction that reads `owner`'s bytes: users of it and of its reshape aliases.
  std::vector<const Instruction*> readers_of(const Instruction* owner) const {
    std::vector<const Instruction*> readers, stack{owner};
    while (!stack.empty()) {
      const Instruction* v = stack.back();
      stack.pop_back();
      for (const Instruction* u : v->users()) {
        if (!position_.count(u)) continue;
        if (plan_.buffers.at(u).kind == BufferKind::kAlias) stack.push_back(u);
        else readers.push_back(u);
      }
    }
    return readers;
  }

  // May output `value` be computed straight into parameter `param`'s storage?
  Decision can_donate(const Instruction* value, const Instruction* param, int output_index) const {
    if (plan_.buffers.at(value).kind != BufferKind::kArena)
      return Decision::no("the value is a parameter, constant, reshape or another output");
    if (value->shape().byte_size() != param->shape().byte_size())
      return Decision::no("its size differs from the parameter's");
    const auto& outs = entry_.outputs();
    for (size_t j = 0; j < outs.size(); ++j)
      if (static_cast<int>(j) != output_index && plan_.storage_owner(outs[j]) == param)
        return Decision::no(str_cat("output ", j, " returns the old value of the parameter"));
    for (const Instruction* r : readers_of(param)) {
      if (r == value) continue;
      if (position_.at(r) > position_.at(value))
        return Decision::no(str_cat("%", r->id(), " reads the parameter after the update is computed"));
    }
    for (size_t k = 0; k < value->operand_count(); ++k)
      if (plan_.storage_owner(value->operand(k)) == param && !reads_elementwise(*value, k))
        return Decision::no("the update reads the parameter at other indices than it writes");
    return Decision::yes();
  }

  void place_outputs() {
    const auto& outs = entry_.outputs();
    std::unordered_set<const Instruction*> placed;
    for (size_t i = 0; i < outs.size(); ++i) {
      const Instruction* value = outs[i];
      int out = static_cast<int>(i);
      int param_index = -1;
      for (const ir::OutputAlias& a : module_.aliases())
        if (a.output_index == out) param_index = a.parameter_index;
      BufferInfo& b = plan_.buffers.at(value);
      if (param_index >= 0) {
        const Instruction* param = entry_.parameter(static_cast<size_t>(param_index));
        if (plan_.storage_owner(value) == param) {  // same bytes, reshaped or not
          plan_.notes.push_back(str_cat("output ", out, " is parameter ", param_index, " unchanged: nothing to write"));
          continue;
        }
        Decision d = placed.count(value) ? Decision::no("the value is already another output")
                                         : can_donate(value, param, out);
        if (d) {
          b.kind = BufferKind::kDonated;
          b.parameter_index = param_index;
          placed.insert(value);
          plan_.notes.push_back(str_cat("output ", out, " (%", value->id(), ") computed in place into parameter ", param_index));
        } else {
          add_copy(value, out, str_cat("not donated to parameter ", param_index, ": ", d.reason()));
        }
        continue;
      }
      plan_.output_bytes += b.size;
      // A reshape is the same bytes: the value it reshapes is computed straight into the output.
      const Instruction* owner = plan_.storage_owner(value);
      BufferInfo& ob = plan_.buffers.at(owner);
      if (ob.kind == BufferKind::kArena && !placed.count(owner)) {
        ob.kind = BufferKind::kOutput;
        ob.output_index = out;
        placed.insert(owner);
        if (owner != value)
          plan_.notes.push_back(str_cat("output ", out, " (%", value->id(), ") is %", owner->id(),
                                        " reshaped: computed straight into the output"));
      } else {
        add_copy(value, out, "copied: the value is a parameter, constant, or another output's bytes");
      }
    }
  }

  void add_copy(const Instruction* value, int out, std::string why) {
    plan_.output_copies.push_back({value, out});
    live_to_end_.insert(plan_.storage_owner(value));
    plan_.notes.push_back(str_cat("output ", out, " (%", value->id(), ") ", why));
  }

  void compute_liveness() {
    for (const Instruction* inst : plan_.order) {
      last_use_[inst] = position_.at(inst);  // an unread value dies where it is made
      for (const Instruction* op : inst->operands()) {
        int& last = last_use_[plan_.storage_owner(op)];
        last = std::max(last, position_.at(inst));
      }
    }
    for (const Instruction* v : live_to_end_) last_use_[v] = INT_MAX;
  }

  // The dying arena operand whose slot `inst` may overwrite in place, or nullptr. A
  // dynamic_update_slice may take over only its operand x: it then writes just the update.
  const Instruction* in_place_donor(const Instruction* inst, int t) const {
    const bool update = inst->opcode() == Opcode::kDynamicUpdateSlice;
    bool elementwise = ir::is_elementwise(inst->opcode()) || update ||
        (inst->opcode() == Opcode::kFusion && inst->attrs().fusion_kind == ir::FusionKind::kLoop);
    if (!elementwise) return nullptr;
    int64_t size = plan_.buffers.at(inst).size;
    for (size_t i = 0; i < (update ? 1 : inst->operand_count()); ++i) {
      const Instruction* owner = plan_.storage_owner(inst->operand(i));
      const BufferInfo& b = plan_.buffers.at(owner);
      if (b.kind != BufferKind::kArena || b.size != size || last_use_.at(owner) != t) continue;
      bool ok = true;
      for (size_t k = 0; k < inst->operand_count(); ++k)
        if (plan_.storage_owner(inst->operand(k)) == owner) ok = ok && reads_elementwise(*inst, k);
      if (ok) return owner;
    }
    return nullptr;
  }

  void assign_offsets() {
    ArenaAllocator arena(target_.alignment());
    std::unordered_set<const Instruction*> handed_over;  // slot now belongs to a consumer
    for (int t = 0; t < static_cast<int>(plan_.order.size()); ++t) {
      const Instruction* inst = plan_.order[static_cast<size_t>(t)];
      BufferInfo& b = plan_.buffers.at(inst);
      const Instruction* donor = nullptr;
      if (b.kind == BufferKind::kArena && b.size > 0) {
        donor = reuse_ ? in_place_donor(inst, t) : nullptr;
        if (donor != nullptr) {
          b.offset = plan_.buffers.at(donor).offset;
          handed_over.insert(donor);
          plan_.notes.push_back(str_cat("%", inst->id(), " overwrites %", donor->id(), " in place"));
        } else {
          b.offset = arena.allocate(b.size);
        }
      }
      if (!reuse_) continue;
      // Free the arena values whose last reader is this instruction (itself, if unread).
      std::unordered_set<const Instruction*> dying{inst};
      for (const Instruction* op : inst->operands()) dying.insert(plan_.storage_owner(op));
      for (const Instruction* v : dying) {
        const BufferInfo& vb = plan_.buffers.at(v);
        if (vb.kind != BufferKind::kArena || vb.size == 0 || last_use_.at(v) != t || handed_over.count(v))
          continue;
        arena.release(vb.offset, vb.size);
      }
    }
    plan_.arena_bytes = arena.high_water();
  }

  const ir::Module& module_;
  const ir::Computation& entry_;
  const TargetInfo& target_;
  bool reuse_;
  bool f32_values_as_16bit_;
  MemoryPlan plan_;
  std::unordered_map<const Instruction*, int> position_;
  std::unordered_map<const Instruction*, int> last_use_;
  std::unordered_set<const Instruction*> live_to_end_;
};

}  // namespace

MemoryPlan plan_memory(const ir::Module& module, const TargetInfo& target, bool reuse) {
  return Planner(module, target, reuse).run();
}

int64_t arena_bytes_with_16bit_values(const ir::Module& module, const TargetInfo& target) {
  return Planner(module, target, /*reuse=*/true, /*f32_values_as_16bit=*/true).run().arena_bytes;
}

}  // namespace kiln::compiler
