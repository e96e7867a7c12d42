// Horizontal fusion of loop kernels (loop_grouping.h).
#include "kiln/runtime/cpu/loop_grouping.h"

#include <algorithm>
#include <unordered_map>

#include "kiln/compiler/codegen/loop_ir.h"
#include "kiln/core/str_cat.h"
#include "kiln/ir/builder.h"

namespace kiln::cpu {
namespace {

using ir::Instruction;

const ir::Computation& body_of(const Instruction& fusion) { return *fusion.attrs().body; }

// A LoopIr's register type (loop_ir.h). Members must agree, or grouping would change the
// precision a member computes in.
bool uses_double(const Instruction& fusion) {
  for (const Instruction* inst : body_of(fusion).post_order())
    if (codegen::needs_double_registers(inst->dtype())) return true;
  return false;
}

bool contains(const std::vector<const Instruction*>& v, const Instruction* x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Whether `member` reads its operand `i` only element by element over `dims` (every user of
// the body parameter is an elementwise op of that shape), so element e of the operand is read
// only where element e is computed.
bool read_elementwise(const Instruction& member, size_t i, const Dims& dims) {
  if (member.operand(i)->shape().dims() != dims) return false;
  for (const Instruction* p : body_of(member).parameters()) {
    if (p->attrs().parameter_index != static_cast<int64_t>(i)) continue;
    for (const Instruction* u : p->users())
      if (!ir::is_elementwise(u->opcode()) || u->shape().dims() != dims) return false;
  }
  return true;
}

// Where a value's bytes live: a space (the arena, an argument, an output, a constant) and a
// byte range in it.
struct Region {
  int space = 0;
  int64_t id = 0, begin = 0, end = 0;
  bool overlaps(const Region& o) const { return space == o.space && id == o.id && begin < o.end && o.begin < end; }
  bool operator==(const Region& o) const = default;
};

Region region_of(const Instruction* v, const compiler::MemoryPlan& plan) {
  const compiler::BufferInfo& b = plan.storage(v);
  switch (b.kind) {
    case compiler::BufferKind::kArena: return {0, 0, b.offset, b.offset + b.size};
    case compiler::BufferKind::kParameter: case compiler::BufferKind::kDonated: return {1, b.parameter_index, 0, b.size};
    case compiler::BufferKind::kOutput: return {2, b.output_index, 0, b.size};
    default: return {3, plan.storage_owner(v)->id(), 0, b.size};
  }
}

}  // namespace

bool groupable(const Instruction& inst) {
  return inst.opcode() == ir::Opcode::kFusion && inst.attrs().fusion_kind == ir::FusionKind::kLoop;
}

bool can_join(const std::vector<const Instruction*>& group, const Instruction& inst, const compiler::MemoryPlan& plan) {
  const Dims& dims = group[0]->shape().dims();
  if (inst.shape().dims() != dims || uses_double(inst) != uses_double(*group[0])) return false;
  std::vector<const Instruction*> members = group;
  members.push_back(&inst);
  // A member's value reaches a later member only directly (then as a register), never through
  // an alias of its buffer or a non-elementwise read.
  for (size_t i = 0; i < inst.operand_count(); ++i) {
    const Instruction* x = inst.operand(i);
    if (contains(group, x) ? !read_elementwise(inst, i, dims) : contains(group, plan.storage_owner(x))) return false;
  }
  const Region mine = region_of(&inst, plan);
  for (const Instruction* m : group)
    if (region_of(m, plan).overlaps(mine)) return false;
  std::vector<const Instruction*> outside;
  for (const Instruction* m : members) {
    for (size_t i = 0; i < m->operand_count(); ++i) {
      const Instruction* x = m->operand(i);
      if (contains(members, x)) continue;
      if (!contains(outside, x)) outside.push_back(x);
      // An input in a buffer the group writes must be read where it is written, and only there.
      const Region r = region_of(x, plan);
      for (const Instruction* o : members) {
        const Region w = region_of(o, plan);
        if (r.overlaps(w) && (!(r == w) || size_of(x->dtype()) != size_of(o->dtype()) || !read_elementwise(*m, i, dims)))
          return false;
      }
    }
  }
  return outside.size() <= kMaxGroupOperands;
}

GroupedLoop merge_group(ir::Module& scratch, const std::vector<const Instruction*>& group) {
  ir::Computation* c = scratch.add_computation(str_cat("group", group[0]->id()));
  ir::Builder b(c);
  GroupedLoop g{c, {}};
  std::unordered_map<const Instruction*, Instruction*> outer;  // entry value -> its value here
  for (const Instruction* m : group) {
    std::unordered_map<const Instruction*, Instruction*> local;
    for (const Instruction* inst : body_of(*m).post_order()) {
      if (inst->opcode() == ir::Opcode::kParameter) {
        const Instruction* x = m->operand(static_cast<size_t>(inst->attrs().parameter_index));
        auto [it, fresh] = outer.try_emplace(x, nullptr);
        if (fresh) {
          it->second = b.parameter(x->shape(), "");
          g.operands.push_back(x);
        }
        local[inst] = it->second;
        continue;
      }
      std::vector<Instruction*> operands;
      for (const Instruction* op : inst->operands()) operands.push_back(local.at(op));
      local[inst] = b.add(inst->opcode(), std::move(operands), inst->attrs(), &inst->shape());
    }
    Instruction* root = local.at(body_of(*m).outputs()[0]);
    c->add_output(root);
    outer[m] = b.convert(root, root->dtype());  // what a later member would have loaded
  }
  return g;
}

}  // namespace kiln::cpu
