#include "kiln/compiler/pass_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "kiln/compiler/default_pipeline.h"
#include "kiln/compiler/memory_plan.h"
#include "kiln/compiler/passes/cse.h"
#include "kiln/compiler/passes/dce.h"
#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/reference_eval.h"
#include "tests/compiler/test_target.h"
#include "tests/testing/temp_dir.h"

namespace kiln::compiler {
namespace {

using ir::Instruction;
using ir::Opcode;

// A pass that breaks the IR: an add whose declared shape disagrees with its operands.
class BrokenPass final : public Pass {
 public:
  std::string_view name() const override { return "broken"; }
  bool run(ir::Module& module) override {
    ir::Computation& c = *module.entry();
    Instruction* x = c.parameter(0);
    c.set_output(0, c.add(Opcode::kAdd, Shape(DType::kF32, {7}), {x, x}));
    return true;
  }
};

void build_duplicate_exps(ir::Module& m) {
  ir::Builder b(m.entry());
  b.set_source("test.cpp:1");
  auto* x = b.parameter(Shape(DType::kF32, {4}), "x");
  m.entry()->set_outputs({b.binary(Opcode::kAdd, b.unary(Opcode::kExp, x), b.unary(Opcode::kExp, x))});
}

TEST(PassPipelineTest, RunsPassesInOrderAndSkipsDisabledOnes) {
  ir::Module m("m");
  build_duplicate_exps(m);
  PassPipeline pipeline("p");
  pipeline.add<CsePass>().add<DcePass>();
  EXPECT_EQ(pipeline.pass_names(), (std::vector<std::string>{"cse", "dce"}));
  auto records = pipeline.run(m, {.verify_ir = true, .disabled_passes = {"cse"}, .dump_ir_dir = {}, .label = {}});
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(records[0].skipped);
  EXPECT_FALSE(records[1].changed);
  records = pipeline.run(m);
  EXPECT_TRUE(records[0].changed);
  ASSERT_EQ(records[0].notes.size(), 1u);
  EXPECT_EQ(ir::to_string(*m.entry()),
            "entry {\n"
            "  %0 = f32[4] parameter(0) \"x\"\n"
            "  %1 = f32[4] exp(%0)\n"
            "  %2 = f32[4] add(%1, %1)\n"
            "  outputs(%2)\n"
            "}\n");
}

TEST(PassPipelineTest, DumpsTheIrAndDecisionsAfterEveryPass) {
  kiln::testing::TempDir dir;
  ir::Module m("step");
  build_duplicate_exps(m);
  PassPipeline pipeline("p");
  pipeline.add<CsePass>().add<DcePass>();
  pipeline.run(m, {.verify_ir = true, .disabled_passes = {"dce"}, .dump_ir_dir = dir.path().string(), .label = "train"});
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"train.00.input.kir", "train.01.cse.kir"}));
  std::ifstream in(dir.path() / "train.01.cse.kir");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("  %1 = f32[4] exp(%0)  # test.cpp:1\n"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("# decisions of cse:\n#   merged f32[4] exp("), std::string::npos) << text.str();
}

TEST(PassPipelineTest, NamesThePassThatBrokeTheIr) {
  ir::Module m("m");
  build_duplicate_exps(m);
  PassPipeline pipeline("p");
  pipeline.add<BrokenPass>();
  try {
    pipeline.run(m);
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("[pass broken] produced invalid IR"), std::string::npos) << e.what();
  }
}

// One SGD training step of a 2-layer MLP with softmax cross-entropy, written out as the
// tracer and the gradient tape would emit it (including the redundancy they leave behind).
struct MlpStep {
  static constexpr int64_t kBatch = 8, kIn = 32, kHidden = 16, kClasses = 10;
  ir::Module m{"mlp_step"};
  ir::Builder b{m.entry()};
  Instruction* mm(Instruction* l, Instruction* r, int64_t lc, int64_t rc) {
    return b.dot_general(l, r, {.lhs_batch = {}, .rhs_batch = {}, .lhs_contracting = {lc}, .rhs_contracting = {rc}});
  }
  Instruction* row_bcast(Instruction* v, Dims dims) { return b.broadcast_in_dim(v, std::move(dims), {1}); }
  Instruction* col_bcast(Instruction* v, Dims dims) { return b.broadcast_in_dim(v, std::move(dims), {0}); }
  Instruction* sgd(Instruction* w, Instruction* grad) {
    return b.binary(Opcode::kSub, w, b.binary(Opcode::kMul, b.full(w->shape(), 0.1), grad));
  }

  MlpStep() {
    auto* x = b.parameter(Shape(DType::kF32, {kBatch, kIn}), "x");
    auto* y = b.parameter(Shape(DType::kF32, {kBatch, kClasses}), "y_onehot");
    auto* w1 = b.parameter(Shape(DType::kF32, {kIn, kHidden}), "w1");
    auto* b1 = b.parameter(Shape(DType::kF32, {kHidden}), "b1");
    auto* w2 = b.parameter(Shape(DType::kF32, {kHidden, kClasses}), "w2");
    auto* b2 = b.parameter(Shape(DType::kF32, {kClasses}), "b2");
    Dims bh{kBatch, kHidden}, bc{kBatch, kClasses};
    // forward
    auto* h_pre = b.binary(Opcode::kAdd, mm(x, w1, 1, 0), row_bcast(b1, bh));
    auto* h = b.binary(Opcode::kMax, h_pre, b.full(h_pre->shape(), 0));
    auto* logits = b.binary(Opcode::kAdd, mm(h, w2, 1, 0), row_bcast(b2, bc));
    auto* z = b.binary(Opcode::kSub, logits, col_bcast(b.reduce(Opcode::kReduceMax, logits, {1}), bc));
    auto* e = b.unary(Opcode::kExp, z);
    auto* s = b.reduce(Opcode::kReduceSum, e, {1});
    auto* logp = b.binary(Opcode::kSub, z, col_bcast(b.unary(Opcode::kLog, s), bc));
    auto* nll = b.reduce(Opcode::kReduceSum, b.binary(Opcode::kMul, y, logp), {0, 1});
    auto* loss = b.binary(Opcode::kMul, nll, b.scalar(-1.0 / kBatch, DType::kF32));
    // backward: dlogits = (softmax - y) / B, with the tape's "* 1" seed left in
    auto* softmax = b.binary(Opcode::kDiv, e, col_bcast(s, bc));
    auto* seed = b.binary(Opcode::kMul, b.full(Shape(DType::kF32, bc), 1), b.full(Shape(DType::kF32, bc), 1.0 / kBatch));
    auto* dlogits = b.binary(Opcode::kMul, b.binary(Opcode::kSub, softmax, y), seed);
    auto* dw2 = mm(h, dlogits, 0, 0);
    auto* db2 = b.reduce(Opcode::kReduceSum, dlogits, {0});
    auto* dh = mm(dlogits, w2, 1, 1);
    auto* zero = b.full(h->shape(), 0);
    auto* dh_pre = b.select(b.compare(ir::Comparison::kGt, h, zero), dh, zero);
    auto* dw1 = mm(x, dh_pre, 0, 0);
    auto* db1 = b.reduce(Opcode::kReduceSum, dh_pre, {0});
    m.entry()->set_outputs({loss, sgd(w1, dw1), sgd(b1, db1), sgd(w2, dw2), sgd(b2, db2)});
    for (int i = 0; i < 4; ++i) m.add_alias({i + 1, i + 2});
  }
};

std::map<std::string, int> kernel_counts(const ir::Computation& entry) {
  std::map<std::string, int> counts;
  for (const Instruction* inst : entry.post_order()) {
    Opcode op = inst->opcode();
    if (op == Opcode::kParameter || op == Opcode::kConstant || op == Opcode::kReshape) continue;
    std::string key(ir::opcode_name(op));
    if (op == Opcode::kFusion) key += str_cat(".", ir::fusion_kind_name(inst->attrs().fusion_kind));
    ++counts[key];
  }
  return counts;
}

TEST(PassPipelineTest, DefaultPipelineFusesAnMlpTrainStep) {
  MlpStep step;
  testing::TestTarget target;
  PassPipeline pipeline = default_pipeline(target);
  EXPECT_EQ(pipeline.pass_names(),
            (std::vector<std::string>{"algebraic-simplify", "constant-folding", "cse", "dce",
                                      "algebraic-simplify", "constant-folding", "cse", "dce",
                                      "loop-invariant-hoisting", "output-fusion", "reduction-fusion",
                                      "elementwise-fusion", "dce"}));
  pipeline.run(step.m);
  // Per step: 2 matmul+bias(+relu) calls, 3 gradient matmuls, the loss as one reduction
  // fusion, 8 loop kernels (4 SGD updates, relu gradient, softmax-minus-labels, the logit
  // shift, the loss scale), softmax's max/exp/sum and the two bias-gradient sums.
  EXPECT_EQ(kernel_counts(*step.m.entry()),
            (std::map<std::string, int>{{"dot_general", 3}, {"exp", 1}, {"fusion.loop", 8},
                                        {"fusion.output", 2}, {"fusion.reduction", 1},
                                        {"reduce_max", 1}, {"reduce_sum", 3}}));
  auto relu = match_output_fusion(*step.m.computations()[1]);
  ASSERT_TRUE(relu.has_value());
  EXPECT_TRUE(relu->has_bias);
  EXPECT_EQ(relu->activation, EpilogueActivation::kRelu);
  // The tape's "* 1" seed was simplified away and its constant product folded.
  EXPECT_EQ(ir::to_string(*step.m.computations()[9]),
            "loop_fusion.5 {\n"
            "  %0 = f32[8,10] parameter(0)\n"
            "  %1 = f32[8] parameter(1)\n"
            "  %2 = f32[8,10] parameter(2)\n"
            "  %3 = f32[8,10] broadcast_in_dim(%1), dims={0}\n"
            "  %4 = f32[8,10] div(%0, %3)\n"
            "  %5 = f32[8,10] sub(%4, %2)\n"
            "  %6 = f32[] constant(0.125)\n"
            "  %7 = f32[8,10] broadcast_in_dim(%6), dims={}\n"
            "  %8 = f32[8,10] mul(%5, %7)\n"
            "  outputs(%8)\n"
            "}\n");

  MemoryPlan plan = plan_memory(step.m, target);
  EXPECT_LT(plan.arena_bytes, plan_memory(step.m, target, /*reuse=*/false).arena_bytes);
  // No two arena values that are live together share bytes (except a value written in place
  // over an operand that dies at that very instruction).
  std::map<const Instruction*, std::pair<size_t, size_t>> live;  // storage owner -> [def, last use]
  for (size_t t = 0; t < plan.order.size(); ++t) {
    live.emplace(plan.order[t], std::make_pair(t, t));
    for (const Instruction* op : plan.order[t]->operands()) live.at(plan.storage_owner(op)).second = t;
  }
  for (const OutputCopy& c : plan.output_copies) live.at(plan.storage_owner(c.source)).second = plan.order.size();
  for (const auto& [a, ra] : live) {
    for (const auto& [b, rb] : live) {
      const BufferInfo& ba = plan.buffers.at(a);
      const BufferInfo& bb = plan.buffers.at(b);
      if (a >= b || ba.kind != BufferKind::kArena || bb.kind != BufferKind::kArena) continue;
      bool together = ra.first <= rb.second && rb.first <= ra.second;
      bool in_place = (ra.second == rb.first || rb.second == ra.first) && ba.offset == bb.offset;
      bool overlap = ba.offset < bb.offset + bb.size && bb.offset < ba.offset + ba.size;
      EXPECT_FALSE(together && overlap && !in_place) << "%" << a->id() << " and %" << b->id();
    }
  }
  int donated = 0;
  for (const auto& [inst, buffer] : plan.buffers) donated += buffer.kind == BufferKind::kDonated;
  EXPECT_EQ(donated, 4);
  EXPECT_TRUE(plan.output_copies.empty());
}

TEST(PassPipelineTest, DefaultPipelineKeepsTheStepsValues) {
  MlpStep original, optimized;
  testing::TestTarget target;
  default_pipeline(target).run(optimized.m);
  std::vector<HostTensor> args;
  uint32_t state = 12345;  // a fixed LCG: values in [-1, 1)
  for (const Instruction* p : original.m.entry()->parameters()) {
    HostTensor t(p->shape());
    for (float& v : t.data<float>()) {
      state = state * 1664525u + 1013904223u;
      v = static_cast<float>(state >> 8) / static_cast<float>(1 << 23) - 1.0f;
    }
    args.push_back(t);
  }
  std::vector<HostTensor> expected = ir::evaluate(original.m, args);
  std::vector<HostTensor> actual = ir::evaluate(optimized.m, args);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    auto e = expected[i].to_vector<float>();
    auto a = actual[i].to_vector<float>();
    ASSERT_EQ(a.size(), e.size());
    for (size_t j = 0; j < e.size(); ++j) EXPECT_NEAR(a[j], e[j], 1e-5f) << "output " << i << " element " << j;
  }
}

}  // namespace
}  // namespace kiln::compiler
