// The CPU lowering's walk (cpu_lowerer_impl.h): each planned instruction to its handler, loop
// fusions grouped into one kernel, fusions to the kernel of their kind, and the reference
// evaluator for what has no kernel; the entry point of lowering.h.
#include "kiln/runtime/cpu/lowering.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string_view>

#include "kiln/core/check.h"
#include "kiln/core/logging.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/runtime/cpu/cpu_lowerer_impl.h"
#include "kiln/runtime/cpu/loop_grouping.h"
#include "kiln/runtime/cpu/onednn_util_impl.h"
#include "kiln/runtime/cpu/reference_fallbacks.h"

namespace kiln::cpu::lowering {
namespace {

// Multiply-adds x 2 of the matmuls and convolutions `inst` runs (itself or inside its fusion
// body): dot_general = 2 * out elements * contracted size; convolution = 2 * out elements *
// filter elements / output channels (each output reads KH*KW*Cin/groups inputs).
int64_t contraction_flops(const Instruction& inst) {
  if (inst.opcode() == Opcode::kFusion && inst.attrs().body != nullptr) {
    int64_t total = 0;
    for (const Instruction* i : inst.attrs().body->post_order()) total += contraction_flops(*i);
    return total;
  }
  if (inst.opcode() == Opcode::kDotGeneral) {
    int64_t k = 1;
    for (int64_t d : inst.attrs().dot.lhs_contracting) k *= inst.operand(0)->shape().dims()[static_cast<size_t>(d)];
    return 2 * inst.shape().num_elements() * k;
  }
  if (inst.opcode() == Opcode::kConvolution) {
    const Shape& filter = inst.operand(1)->shape();  // HWIO
    const int64_t out_channels = std::max<int64_t>(filter.dims().back(), 1);
    return 2 * inst.shape().num_elements() * (filter.num_elements() / out_channels);
  }
  return 0;
}

// The op a fallback is counted under: the opcode's name, or for a fusion its kind and the
// distinct ops of its body ("fusion(loop: add, pad)"), which are what lacked a kernel.
std::string fallback_key(const Instruction& inst) {
  if (inst.opcode() != Opcode::kFusion) return std::string(ir::opcode_name(inst.opcode()));
  std::set<std::string_view> ops;
  for (const Instruction* i : inst.attrs().body->post_order())
    if (i->opcode() != Opcode::kParameter && i->opcode() != Opcode::kConstant) ops.insert(ir::opcode_name(i->opcode()));
  std::string key = str_cat("fusion(", ir::fusion_kind_name(inst.attrs().fusion_kind), ":");
  for (std::string_view op : ops) key += str_cat(key.back() == ':' ? " " : ", ", op);
  return key + ")";
}

}  // namespace

const ir::Computation* wrap(ir::Module& scratch, const Instruction& inst) {
  ir::Computation* c = scratch.add_computation(str_cat("op", inst.id()));
  ir::Builder b(c);
  std::vector<Instruction*> params;
  for (const Instruction* op : inst.operands()) params.push_back(b.parameter(op->shape(), ""));
  c->add_output(b.add(inst.opcode(), params, inst.attrs(), &inst.shape()));
  return c;
}

void Lowerer::lower_all() {
  find_folded_converts();
  std::vector<const Instruction*> group;  // consecutive loop fusions that run as one kernel
  for (const Instruction* inst : exe_.plan().order) {
    if (options_.horizontal_fusion && groupable(*inst)) {
      if (!group.empty() && !can_join(group, *inst, exe_.plan())) lower_group(group);
      group.push_back(inst);
    } else if (has_step(*inst)) {
      lower_group(group);
      lower_one(*inst);
    }
  }
  lower_group(group);
  batch_.compile();  // every fused loop's code in one LLVM compile
}

Step Lowerer::make_step(const Instruction& inst, std::string label) {
  Step s;
  s.label = std::move(label);
  s.flops = contraction_flops(inst);
  s.source = inst.source();
  for (const Instruction* op : inst.operands()) s.reads.push_back(exe_.value_id(op));
  s.writes.push_back(exe_.value_id(&inst));
  return s;
}

void Lowerer::lower_group(std::vector<const Instruction*>& group) {
  std::shared_ptr<LoopKernel> k;
  GroupedLoop g{};
  if (group.size() > 1) {
    g = merge_group(exe_.scratch_module(), group);
    k = LoopKernel::create(*g.body, options_.engine, &batch_);
  }
  if (k == nullptr) {  // one member, or a member a loop cannot run: each on its own
    for (const Instruction* m : group) lower_one(*m);
    group.clear();
    return;
  }
  Step s;
  s.source = group[0]->source();
  size_t ops = 0;
  for (const Instruction* m : group) ops += m->attrs().body->post_order().size();
  s.label = str_cat("fusion(loop x", group.size(), ", ", ops, " ops)");
  for (const Instruction* x : g.operands) s.reads.push_back(exe_.value_id(x));
  for (const Instruction* m : group) s.writes.push_back(exe_.value_id(m));
  add_team_step(std::move(s), k->work(), [k](const void* const* in, void* const* outs) { k->run_team(in, outs); });
  group.clear();
}

bool Lowerer::has_step(const Instruction& inst) const {
  const compiler::BufferKind k = exe_.plan().buffers.at(&inst).kind;
  return k != compiler::BufferKind::kAlias && k != compiler::BufferKind::kParameter &&
         k != compiler::BufferKind::kConstant && folded_converts_.count(&inst) == 0;
}

void Lowerer::find_folded_converts() {
  const compiler::MemoryPlan& plan = exe_.plan();
  std::unordered_map<const Instruction*, size_t> position;
  std::unordered_map<int, size_t> first_write;  // parameter index -> first in-place update
  for (size_t i = 0; i < plan.order.size(); ++i) {
    position[plan.order[i]] = i;
    const compiler::BufferInfo& b = plan.buffers.at(plan.order[i]);
    if (b.kind == compiler::BufferKind::kDonated) first_write.emplace(b.parameter_index, i);
  }
  for (const Instruction* c : plan.order) {
    const DType t = c->dtype();
    if (c->opcode() != Opcode::kConvert || (t != DType::kBF16 && t != DType::kF16)) continue;
    if (c->operand(0)->dtype() != DType::kF32 || plan.buffers.at(c).kind != compiler::BufferKind::kArena) continue;
    const compiler::BufferInfo& source = plan.storage(c->operand(0));
    if (source.kind != compiler::BufferKind::kParameter && source.kind != compiler::BufferKind::kConstant) continue;
    if (!all_16bit_matmuls_widened(t)) continue;
    auto writer = source.kind == compiler::BufferKind::kParameter ? first_write.find(source.parameter_index)
                                                                  : first_write.end();
    bool folds = !c->users().empty();
    for (const Instruction* u : c->users())
      folds = folds && folds_into(*u, c) && (writer == first_write.end() || position.at(u) < writer->second);
    if (folds) folded_converts_.insert(c);
  }
}

bool Lowerer::folds_into(const Instruction& u, const Instruction* c) {
  const Instruction* dot = &u;
  if (u.opcode() == Opcode::kFusion) {
    if (u.attrs().fusion_kind != ir::FusionKind::kOutput) return false;
    std::optional<compiler::OutputFusionInfo> e = compiler::match_output_fusion(*u.attrs().body);
    if (!e || e->contraction->opcode() != Opcode::kDotGeneral) return false;
    dot = e->contraction;
  } else if (u.opcode() != Opcode::kDotGeneral) {
    return false;
  }
  for (size_t i = 3; i < u.operand_count(); ++i)
    if (u.operand(i) == c) return false;
  return MatmulKernel::can_run(*dot);
}

bool Lowerer::all_16bit_matmuls_widened(DType t) {
  if (options_.matmul.choice == MatmulOptions::Choice::kF32) return true;
  auto it = native_16bit_.find(t);
  if (it == native_16bit_.end()) it = native_16bit_.emplace(t, !native_matmul_isa(t).empty()).first;
  return !it->second;
}

void Lowerer::lower_one(const Instruction& inst) {
  if (has_step(inst) && !visit(inst)) fallback(inst);
}

void Lowerer::fallback(const Instruction& inst) {
  const ReferenceFallbackRule* rule = find_reference_fallback(inst);
  if (rule == nullptr && !options_.unlisted_fallbacks)
    KILN_THROW(CompileError, "[cpu] no kernel takes ", ir::describe(inst),
               inst.source().empty() ? "" : str_cat(" (from ", inst.source(), ")"),
               ", and runtime/cpu/reference_fallbacks.cpp lists no reference fallback for it: a gap in the CPU ",
               "backend, please report it. Hint: KILN_UNLISTED_FALLBACKS=1 runs it on the reference evaluator "
               "(correct, but slow).");
  log(LogLevel::kDebug, str_cat("cpu: reference kernel for ", ir::describe(inst)));
  exe_.add_reference_fallback({fallback_key(inst), ir::describe(inst),
                               rule != nullptr ? rule->reason : std::string_view()});
  std::vector<Shape> shapes;
  for (const Instruction* op : inst.operands()) shapes.push_back(op->shape());
  const Instruction* ip = &inst;
  const int64_t bytes = inst.shape().byte_size();
  add(inst, str_cat("reference ", ir::opcode_name(inst.opcode())), [ip, shapes, bytes](const void* const* in, void* out) {
    std::vector<HostTensor> views;
    for (size_t i = 0; i < shapes.size(); ++i) views.push_back(HostTensor::view(shapes[i], const_cast<void*>(in[i])));
    HostTensor r = ir::evaluate_instruction(*ip, views);
    std::memcpy(out, r.raw_data(), static_cast<size_t>(bytes));
  });
}

// The plan gives parameters and constants their bytes (has_step is false for them): no step.
bool Lowerer::parameter(const Instruction& inst) {
  KILN_CHECK(false, "the cpu lowering was asked for a step for ", ir::describe(inst));
}

bool Lowerer::constant(const Instruction& inst) {
  KILN_CHECK(false, "the cpu lowering was asked for a step for ", ir::describe(inst));
}

// An output fusion on a oneDNN convolution or matmul with its epilogue, a loop fusion as one
// loop kernel, a reduction fusion as a reduction kernel streaming its producer.
bool Lowerer::fusion(const Instruction& inst) {
  const ir::Computation& body = *inst.attrs().body;
  switch (inst.attrs().fusion_kind) {
    case ir::FusionKind::kOutput: {
      if (try_convolution(inst)) return true;
      std::optional<compiler::OutputFusionInfo> e = compiler::match_output_fusion(body);
      if (e && e->contraction->opcode() == Opcode::kDotGeneral) {
        std::string label = str_cat("matmul", e->has_bias ? "+bias" : "");
        if (std::string_view act = onednn::activation_name(e->activation); !act.empty()) label += str_cat("+", act);
        return try_matmul(inst, *e->contraction, e->has_bias, e->activation, label);
      }
      return false;
    }
    case ir::FusionKind::kLoop:
      return try_loop(inst, body, str_cat("fusion(loop, ", body.post_order().size(), " ops)"));
    case ir::FusionKind::kReduction: {
      const Instruction* root = body.outputs()[0];
      return (root->opcode() == Opcode::kReduceSum || root->opcode() == Opcode::kReduceMax ||
              root->opcode() == Opcode::kReduceMin) &&
             try_reduce(inst, *root, str_cat("fusion(reduction, ", body.post_order().size(), " ops)"));
    }
  }
  return false;
}

}  // namespace kiln::cpu::lowering

namespace kiln::cpu {

void lower(CpuExecutable& exe, const LoweringOptions& options, const CompileNested& compile_nested) {
  lowering::Lowerer(exe, options, compile_nested).lower_all();
  exe.group_team_steps();
}

}  // namespace kiln::cpu
