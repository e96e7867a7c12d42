// Algebraic simplification: a table of local rewrite rules, each with its math beside it.
#include "kiln/compiler/passes/algebraic_simplify.h"

#include <optional>

#include "kiln/compiler/passes/ir_patterns.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/printer.h"

namespace kiln::compiler {

using ir::Instruction;
using ir::Opcode;

namespace {

// A rule returns the value that replaces `x`, or nullptr when it does not apply.
using RuleFn = Instruction* (*)(Instruction& x, ir::Builder& b);
struct Rule {
  Opcode opcode;
  const char* text;
  RuleFn apply;
};

bool splat(const Instruction* x, double v) { return is_splat(*x, v); }
bool is_identity_permutation(const Dims& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}
Instruction* lhs(Instruction& x) { return x.operand(0); }
Instruction* rhs(Instruction& x) { return x.operand(1); }

const Rule kRules[] = {
    // x + 0 -> x
    {Opcode::kAdd, "x + 0 -> x", [](Instruction& x, ir::Builder&) {
       return splat(rhs(x), 0) ? lhs(x) : nullptr; }},
    // 0 + x -> x
    {Opcode::kAdd, "0 + x -> x", [](Instruction& x, ir::Builder&) {
       return splat(lhs(x), 0) ? rhs(x) : nullptr; }},
    // x - 0 -> x
    {Opcode::kSub, "x - 0 -> x", [](Instruction& x, ir::Builder&) {
       return splat(rhs(x), 0) ? lhs(x) : nullptr; }},
    // x * 1 -> x
    {Opcode::kMul, "x * 1 -> x", [](Instruction& x, ir::Builder&) {
       return splat(rhs(x), 1) ? lhs(x) : nullptr; }},
    // 1 * x -> x
    {Opcode::kMul, "1 * x -> x", [](Instruction& x, ir::Builder&) {
       return splat(lhs(x), 1) ? rhs(x) : nullptr; }},
    // x * 0 -> 0 (integers only: for floats NaN * 0 = NaN)
    {Opcode::kMul, "x * 0 -> 0 (integer)", [](Instruction& x, ir::Builder&) -> Instruction* {
       if (is_floating(x.dtype())) return nullptr;
       if (splat(rhs(x), 0)) return rhs(x);
       return splat(lhs(x), 0) ? lhs(x) : nullptr; }},
    // x / 1 -> x
    {Opcode::kDiv, "x / 1 -> x", [](Instruction& x, ir::Builder&) {
       return splat(rhs(x), 1) ? lhs(x) : nullptr; }},
    // -(-x) -> x
    {Opcode::kNeg, "neg(neg(x)) -> x", [](Instruction& x, ir::Builder&) {
       return lhs(x)->opcode() == Opcode::kNeg ? lhs(x)->operand(0) : nullptr; }},
    // reshape(x) to x's own shape -> x
    {Opcode::kReshape, "reshape(x) -> x when shapes match", [](Instruction& x, ir::Builder&) {
       return lhs(x)->shape() == x.shape() ? lhs(x) : nullptr; }},
    // reshape(reshape(x)) -> reshape(x)
    {Opcode::kReshape, "reshape(reshape(x)) -> reshape(x)", [](Instruction& x, ir::Builder& b) {
       if (lhs(x)->opcode() != Opcode::kReshape) return static_cast<Instruction*>(nullptr);
       Instruction* inner = lhs(x)->operand(0);
       return inner->shape() == x.shape() ? inner : b.reshape(inner, x.shape().dims()); }},
    // transpose(x, identity) -> x
    {Opcode::kTranspose, "transpose(x, identity) -> x", [](Instruction& x, ir::Builder&) {
       return is_identity_permutation(x.attrs().dims) ? lhs(x) : nullptr; }},
    // transpose(transpose(x, p1), p2) -> transpose(x, p) with p[i] = p1[p2[i]]
    {Opcode::kTranspose, "transpose(transpose(x)) -> transpose(x)", [](Instruction& x, ir::Builder& b) {
       if (lhs(x)->opcode() != Opcode::kTranspose) return static_cast<Instruction*>(nullptr);
       const Dims& p1 = lhs(x)->attrs().dims;
       const Dims& p2 = x.attrs().dims;
       Dims p(p2.size());
       for (size_t i = 0; i < p2.size(); ++i) p[i] = p1[static_cast<size_t>(p2[i])];
       Instruction* inner = lhs(x)->operand(0);
       return is_identity_permutation(p) ? inner : b.transpose(inner, p); }},
    // transpose(dot(a, b), {1,0}) -> dot(b, a), for matrix products: (AB)^T = B^T A^T, and the
    // swapped contraction is free (the matmul kernel reads either layout by strides)
    {Opcode::kTranspose, "transpose(dot(a, b)) -> dot(b, a)", [](Instruction& x, ir::Builder& b) {
       Instruction* d = lhs(x);
       if (d->opcode() != Opcode::kDotGeneral || d->users().size() != 1 || x.attrs().dims != Dims{1, 0} ||
           !d->attrs().dot.lhs_batch.empty() || d->operand(0)->shape().rank() != 2 ||
           d->operand(1)->shape().rank() != 2)
         return static_cast<Instruction*>(nullptr);
       const ir::DotDims& dd = d->attrs().dot;
       return b.dot_general(d->operand(1), d->operand(0),
                            {.lhs_contracting = dd.rhs_contracting, .rhs_contracting = dd.lhs_contracting}); }},
    // broadcast_in_dim(x) to x's own shape, dims in order -> x
    {Opcode::kBroadcastInDim, "broadcast_in_dim(x) -> x when shapes match", [](Instruction& x, ir::Builder&) {
       bool same = lhs(x)->shape() == x.shape() && is_identity_permutation(x.attrs().dims);
       return same ? lhs(x) : nullptr; }},
    // convert(x) to x's own dtype -> x
    {Opcode::kConvert, "convert(x) -> x when dtypes match", [](Instruction& x, ir::Builder&) {
       return lhs(x)->dtype() == x.dtype() ? lhs(x) : nullptr; }},
    // select(true, a, b) -> a;  select(false, a, b) -> b
    {Opcode::kSelect, "select(constant p, a, b) -> a or b", [](Instruction& x, ir::Builder&) -> Instruction* {
       std::optional<double> p = splat_value(*x.operand(0));
       if (!p) return nullptr;
       return *p != 0 ? x.operand(1) : x.operand(2); }},
};

}  // namespace

bool AlgebraicSimplifyPass::run(ir::Module& module) {
  ir::Computation& entry = *module.entry();
  ir::Builder b(&entry);
  bool changed = false;
  for (Instruction* inst : entry.post_order()) {
    for (const Rule& rule : kRules) {
      if (rule.opcode != inst->opcode()) continue;
      b.set_source(inst->source());
      Instruction* replacement = rule.apply(*inst, b);
      if (replacement == nullptr) continue;
      note(str_cat(rule.text, ": ", ir::describe(*inst), " -> %", replacement->id()));
      entry.replace_all_uses(inst, replacement);
      changed = true;
      break;
    }
  }
  if (changed) entry.remove_dead();
  return changed;
}

}  // namespace kiln::compiler
