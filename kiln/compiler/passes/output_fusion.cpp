// Output (epilogue) fusion: contraction + bias + activation -> one kOutput fusion.
#include "kiln/compiler/passes/output_fusion.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "kiln/compiler/passes/fusion_builder.h"
#include "kiln/compiler/passes/ir_patterns.h"
#include "kiln/ir/printer.h"

namespace kiln::compiler {

using ir::Instruction;
using ir::Opcode;

namespace {

bool is_contraction(const Instruction& x) {
  return x.opcode() == Opcode::kDotGeneral || x.opcode() == Opcode::kConvolution;
}

// A splat zero and the constant behind it when it is a broadcast.
void add_zero(const Instruction* z, std::vector<Instruction*>& members) {
  members.push_back(const_cast<Instruction*>(z));
  if (z->opcode() == Opcode::kBroadcastInDim) members.push_back(z->operand(0));
}

struct ActivationMatch {
  EpilogueActivation activation;
  const Instruction* input;
  std::vector<Instruction*> members;  // the activation's instructions, zeros included
};

// The unary rows of the elementwise table that are an epilogue activation of their own.
constexpr std::pair<Opcode, EpilogueActivation> kUnaryActivations[] = {
    {Opcode::kTanh, EpilogueActivation::kTanh}, {Opcode::kLogistic, EpilogueActivation::kLogistic},
    {Opcode::kExp, EpilogueActivation::kExp},   {Opcode::kLog, EpilogueActivation::kLog},
    {Opcode::kSqrt, EpilogueActivation::kSqrt}, {Opcode::kAbs, EpilogueActivation::kAbs},
};

// An activation that is a row of the elementwise table: one of kUnaryActivations, or relu
// as max(x, 0) or max(0, x).
std::optional<ActivationMatch> match_row_activation(const Instruction& a) {
  auto* self = const_cast<Instruction*>(&a);
  for (const auto& [op, activation] : kUnaryActivations)
    if (a.opcode() == op) return ActivationMatch{activation, a.operand(0), {self}};
  if (a.opcode() != Opcode::kMax) return std::nullopt;
  for (size_t z = 0; z < 2; ++z) {
    if (!is_splat(*a.operand(z), 0)) continue;
    ActivationMatch m{EpilogueActivation::kRelu, a.operand(1 - z), {self}};
    add_zero(a.operand(z), m.members);
    return m;
  }
  return std::nullopt;
}

// Recognizes an activation whose root is `a`.
std::optional<ActivationMatch> match_activation(const Instruction& a) {
  switch (a.opcode()) {
#include "kiln/ir/elementwise_cases.inc"
      return match_row_activation(a);
    case Opcode::kSelect: {
      // select(x > 0, x, 0)
      const Instruction* cmp = a.operand(0);
      const Instruction* x = a.operand(1);
      if (cmp->opcode() != Opcode::kCompare || cmp->attrs().comparison != ir::Comparison::kGt ||
          cmp->operand(0) != x || !is_splat(*cmp->operand(1), 0) || !is_splat(*a.operand(2), 0))
        return std::nullopt;
      ActivationMatch m{EpilogueActivation::kRelu, x, {const_cast<Instruction*>(&a), const_cast<Instruction*>(cmp)}};
      add_zero(cmp->operand(1), m.members);
      add_zero(a.operand(2), m.members);
      return m;
    }
#define KILN_SKIP_Unary
#define KILN_SKIP_Binary
#define KILN_SKIP_Select
#include "kiln/ir/opcode_cases.inc"
    case Opcode::kConvert:
      return std::nullopt;
  }
  return std::nullopt;
}

// The rank-1 bias of add(x, broadcast(bias)) (either order) along x's last dim, or nullptr.
const Instruction* match_bias(const Instruction& add, const Instruction& x, const Instruction** broadcast) {
  if (add.opcode() != Opcode::kAdd) return nullptr;
  const Instruction* other = add.operand(0) == &x ? add.operand(1) : add.operand(0);
  if (other == &x || other->opcode() != Opcode::kBroadcastInDim) return nullptr;
  const Instruction* bias = other->operand(0);
  if (bias->shape().rank() != 1 || other->attrs().dims != Dims{x.shape().rank() - 1}) return nullptr;
  *broadcast = other;
  return bias;
}

}  // namespace

std::optional<OutputFusionInfo> match_output_fusion(const ir::Computation& body) {
  if (body.outputs().size() != 1) return std::nullopt;
  OutputFusionInfo info;
  const Instruction* x = body.outputs()[0];
  if (auto act = match_activation(*x)) {
    info.activation = act->activation;
    x = act->input;
  }
  if (x->opcode() == Opcode::kAdd) {
    const Instruction* c = is_contraction(*x->operand(0)) ? x->operand(0) : x->operand(1);
    const Instruction* broadcast = nullptr;
    const Instruction* bias = match_bias(*x, *c, &broadcast);
    if (bias == nullptr || bias->opcode() != Opcode::kParameter || bias->attrs().parameter_index != 2)
      return std::nullopt;
    info.has_bias = true;
    x = c;
  }
  if (!is_contraction(*x) || x->operand(0)->opcode() != Opcode::kParameter ||
      x->operand(0)->attrs().parameter_index != 0 || x->operand(1)->opcode() != Opcode::kParameter ||
      x->operand(1)->attrs().parameter_index != 1)
    return std::nullopt;
  info.contraction = x;
  return info;
}

bool OutputFusionPass::run(ir::Module& module) {
  if (target_ != nullptr && !target_->wants_output_fusion()) return false;
  ir::Computation& entry = *module.entry();
  // Collect the contractions before fusing: make_fusion deletes the epilogue instructions, so
  // a post order taken up front would hold dangling pointers (and a freed address may come
  // back as a clone inside a fusion body). Each region holds exactly one contraction.
  std::vector<Instruction*> contractions;
  for (Instruction* inst : entry.post_order())
    if (is_contraction(*inst)) contractions.push_back(inst);
  bool changed = false;
  for (Instruction* dot : contractions) {
    std::string what = str_cat(opcode_name(dot->opcode()), " %", dot->id());
    if (dot->operand(0) == dot->operand(1)) {
      note(str_cat("not fused ", what, ": lhs and rhs are the same value"));
      continue;
    }
    if (is_output(*dot)) {
      note(str_cat("not fused ", what, ": its result is an output"));
      continue;
    }
    std::vector<Instruction*> region{dot};
    std::vector<Instruction*> leading{dot->operand(0), dot->operand(1)};
    Instruction* root = dot;
    const Instruction* broadcast = nullptr;
    const Instruction* bias = dot->users().size() == 1 ? match_bias(*dot->users()[0], *dot, &broadcast) : nullptr;
    if (bias != nullptr) {
      root = dot->users()[0];
      region.push_back(const_cast<Instruction*>(broadcast));
      region.push_back(root);
      leading.push_back(const_cast<Instruction*>(bias));
    }
    // One activation may follow, if it is all that reads `root` (relu as select reads it twice).
    if (!is_output(*root)) {
      for (Instruction* user : root->users()) {
        std::optional<ActivationMatch> act = match_activation(*user);
        if (!act || act->input != root) continue;
        size_t inside = 0;
        for (Instruction* u : root->users())
          inside += std::count(act->members.begin(), act->members.end(), u);
        if (inside != root->users().size()) continue;
        region.insert(region.end(), act->members.begin(), act->members.end());
        root = user;
        break;
      }
    }
    size_t dot_users_inside = 0;
    for (Instruction* u : dot->users()) dot_users_inside += std::count(region.begin(), region.end(), u);
    if (dot_users_inside != dot->users().size()) {
      note(str_cat("not fused ", what, ": its result has other users (", dot->users().size(), " users)"));
      continue;
    }
    if (root == dot) {
      note(str_cat("not fused ", what, ": no bias add or activation follows"));
      continue;
    }
    std::sort(region.begin(), region.end());
    region.erase(std::unique(region.begin(), region.end()), region.end());
    Instruction* fusion = make_fusion(entry, region, root, ir::FusionKind::kOutput, leading);
    note(str_cat("fused ", what, " with ", region.size() - 1, " epilogue instructions into ",
                 fusion->attrs().body->name()));
    changed = true;
  }
  return changed;
}

}  // namespace kiln::compiler
