// Algebraic simplification: a table of local rewrite rules, each with its math beside it.
#include "kiln/compiler/passes/algebraic_simplify.h"

#include <algorithm>
#include <optional>
#include <vector>

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

// The zero-padded pieces a tree of adds sums (each add but the root read only by the next),
// or nothing when a leaf is anything else.
bool collect_padded_pieces(Instruction* x, bool root, std::vector<Instruction*>& pieces) {
  if (x->opcode() == Opcode::kAdd && (root || x->users().size() == 1))
    return collect_padded_pieces(lhs(*x), false, pieces) && collect_padded_pieces(rhs(*x), false, pieces);
  if (x->opcode() != Opcode::kPad || x->attrs().scalar != 0) return false;
  pieces.push_back(x);
  return true;
}

// The one dim along which every piece is padded (none cropped), when their kept ranges do
// not overlap; -1 otherwise.
int64_t disjoint_padding_dim(std::vector<Instruction*>& pieces) {
  int64_t dim = -1;
  for (const Instruction* p : pieces) {
    const Dims& low = p->attrs().starts;
    const Dims& high = p->attrs().limits;
    for (size_t d = 0; d < low.size(); ++d) {
      if (low[d] < 0 || high[d] < 0) return -1;
      if (low[d] == 0 && high[d] == 0) continue;
      if (dim >= 0 && dim != static_cast<int64_t>(d)) return -1;
      dim = static_cast<int64_t>(d);
    }
  }
  if (dim < 0) return -1;
  const size_t d = static_cast<size_t>(dim);
  std::sort(pieces.begin(), pieces.end(), [d](const Instruction* a, const Instruction* b) {
    return a->attrs().starts[d] < b->attrs().starts[d];
  });
  for (size_t i = 1; i < pieces.size(); ++i) {
    const Instruction* prev = pieces[i - 1];
    if (prev->attrs().starts[d] + prev->operand(0)->shape().dims()[d] > pieces[i]->attrs().starts[d]) return -1;
  }
  return dim;
}

// slice(e(a, b, ...)) -> e(slice(a), slice(b), ...) for an elementwise e that only slices
// read and that they do not read twice over (its elements computed once either way): the
// slices then become offsets in the loads of the fusion that consumes them, and e's whole
// result is never written (an LSTM's z = x + h U, sliced into its four gates). Not over a
// broadcast operand: a sliced broadcast would be materialized (a fusion reads a slice only of
// a value it loads), and x W + broadcast(b) is a matmul's bias epilogue as it stands.
Instruction* slice_of_elementwise(Instruction& x, ir::Builder& b) {
  Instruction* e = lhs(x);
  if (!ir::is_elementwise(e->opcode()) || is_output(*e)) return nullptr;
  for (const Instruction* op : e->operands())
    if (op->opcode() == Opcode::kBroadcastInDim) return nullptr;
  int64_t sliced = 0;
  for (const Instruction* u : e->users()) {
    if (u->opcode() != Opcode::kSlice) return nullptr;
    sliced += u->shape().num_elements();
  }
  if (sliced > e->shape().num_elements()) return nullptr;
  std::vector<Instruction*> operands;
  for (Instruction* op : e->operands()) operands.push_back(b.slice(op, x.attrs().starts, x.attrs().limits, x.attrs().strides));
  ir::Attrs attrs = e->attrs();
  Shape shape = e->shape().with_dims(x.shape().dims());
  return b.add(e->opcode(), std::move(operands), std::move(attrs), &shape);
}

// Zeros of `like`'s shape with `extent` along `dim`.
Instruction* zeros(const Instruction& like, size_t dim, int64_t extent, ir::Builder& b) {
  Dims dims = like.shape().dims();
  dims[dim] = extent;
  return b.broadcast_in_dim(b.scalar(0, like.dtype()), dims, {});
}

// pad(a) + pad(b) + ... with zeros, each piece padded along one dim into its own range ->
// concatenate(zeros, a, zeros, b, ...): one copy kernel instead of a fill and copy per piece
// and an add per pair (the gradient of slicing a value into parts, as an LSTM's four gates).
// Adding 0 is exact but for the sign of a zero (-0 + 0 = +0), as "x + 0 -> x".
Instruction* sum_of_padded_pieces(Instruction& x, ir::Builder& b) {
  std::vector<Instruction*> pieces;
  // The rewrite starts at the tree's root: the topmost add whose leaves are all padded pieces
  // (an enclosing add that also sums something else leaves this one the root).
  if (x.users().size() == 1 && x.users()[0]->opcode() == Opcode::kAdd &&
      collect_padded_pieces(x.users()[0], true, pieces))
    return nullptr;
  pieces.clear();
  if (!collect_padded_pieces(&x, true, pieces) || pieces.size() < 2) return nullptr;
  const int64_t dim = disjoint_padding_dim(pieces);
  if (dim < 0) return nullptr;
  const size_t d = static_cast<size_t>(dim);
  std::vector<Instruction*> parts;
  int64_t at = 0;  // where the next part starts along `dim`
  for (Instruction* p : pieces) {
    const int64_t low = p->attrs().starts[d];
    if (low > at) parts.push_back(zeros(x, d, low - at, b));
    parts.push_back(p->operand(0));
    at = low + p->operand(0)->shape().dims()[d];
  }
  if (const int64_t end = x.shape().dims()[d]; end > at) parts.push_back(zeros(x, d, end - at, b));
  return b.concatenate(std::move(parts), dim);
}

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
    // slice(e(a, b)) -> e(slice(a), slice(b)) when only slices read e
    {Opcode::kSlice, "slice(elementwise(a, b)) -> elementwise(slice(a), slice(b))", slice_of_elementwise},
    // broadcast_in_dim(x) to x's own shape, dims in order -> x
    {Opcode::kBroadcastInDim, "broadcast_in_dim(x) -> x when shapes match", [](Instruction& x, ir::Builder&) {
       bool same = lhs(x)->shape() == x.shape() && is_identity_permutation(x.attrs().dims);
       return same ? lhs(x) : nullptr; }},
    // convert(x) to x's own dtype -> x
    {Opcode::kConvert, "convert(x) -> x when dtypes match", [](Instruction& x, ir::Builder&) {
       return lhs(x)->dtype() == x.dtype() ? lhs(x) : nullptr; }},
    // pad(a, 0) + pad(b, 0) + ... into disjoint ranges of one dim -> concatenate(a, b, ...)
    {Opcode::kAdd, "sum of zero-padded pieces -> concatenate", sum_of_padded_pieces},
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
