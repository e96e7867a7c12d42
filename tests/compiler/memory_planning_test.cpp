#include <gtest/gtest.h>

#include "kiln/compiler/memory_plan.h"
#include "kiln/compiler/passes/elementwise_fusion.h"
#include "kiln/ir/builder.h"
#include "tests/compiler/test_target.h"

namespace kiln::compiler {
namespace {

using ir::Instruction;
using ir::Opcode;
using testing::TestTarget;

const ir::DotDims kMatmul{.lhs_batch = {}, .rhs_batch = {}, .lhs_contracting = {1}, .rhs_contracting = {0}};

int64_t sum_of_arena_sizes(const MemoryPlan& plan) {
  int64_t total = 0;
  for (const auto& [inst, b] : plan.buffers)
    if (b.kind == BufferKind::kArena) total += b.size;
  return total;
}

TEST(MemoryPlanningTest, ElementwiseChainRunsInPlaceInOneSlot) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {1024}), "x");
  auto* e = b.unary(Opcode::kExp, x);
  auto* l = b.unary(Opcode::kLog, e);
  auto* n = b.unary(Opcode::kNeg, l);
  m.entry()->set_outputs({b.unary(Opcode::kTanh, n)});
  TestTarget target;
  MemoryPlan plan = plan_memory(m, target);
  EXPECT_EQ(sum_of_arena_sizes(plan), 3 * 4096);
  EXPECT_EQ(plan.arena_bytes, 4096);  // exp's slot is overwritten by log, then neg
  EXPECT_EQ(plan.buffers.at(l).offset, plan.buffers.at(e).offset);
  EXPECT_EQ(plan.buffers.at(n).offset, plan.buffers.at(e).offset);
  EXPECT_EQ(plan.buffers.at(x).kind, BufferKind::kParameter);
  EXPECT_EQ(plan.buffers.at(m.entry()->outputs()[0]).kind, BufferKind::kOutput);
  EXPECT_EQ(plan.peak_bytes(), 4096 + 4096 + 4096);  // arena + argument + output

  MemoryPlan unplanned = plan_memory(m, target, /*reuse=*/false);
  EXPECT_EQ(unplanned.arena_bytes, 3 * 4096);
}

TEST(MemoryPlanningTest, FreedSlotsAreReusedByLaterValues) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {64, 64}), "x");
  auto* w = b.parameter(Shape(DType::kF32, {64, 64}), "w");
  auto* d1 = b.dot_general(x, w, kMatmul);
  auto* d2 = b.dot_general(d1, w, kMatmul);
  auto* d3 = b.dot_general(d2, w, kMatmul);
  auto* d4 = b.dot_general(d3, w, kMatmul);
  m.entry()->set_outputs({b.dot_general(d4, w, kMatmul)});
  MemoryPlan plan = plan_memory(m, TestTarget());
  // A matmul reads its input while writing its output: two live slots, alternating.
  EXPECT_EQ(plan.arena_bytes, 2 * 16384);
  EXPECT_EQ(plan.buffers.at(d3).offset, plan.buffers.at(d1).offset);
  EXPECT_NE(plan.buffers.at(d2).offset, plan.buffers.at(d1).offset);
  EXPECT_EQ(plan_memory(m, TestTarget(), /*reuse=*/false).arena_bytes, 4 * 16384);
}

TEST(MemoryPlanningTest, OffsetsAreAlignedAndLiveValuesNeverOverlap) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {3, 5}), "x");
  auto* a = b.reduce(Opcode::kReduceSum, x, {0});    // 20 bytes
  auto* c = b.reduce(Opcode::kReduceMax, x, {1});    // 12 bytes
  auto* t = b.transpose(x, {1, 0});                  // 60 bytes
  auto* s = b.reduce(Opcode::kReduceSum, t, {0});    // 12 bytes
  m.entry()->set_outputs({b.binary(Opcode::kAdd, c, s), a});
  MemoryPlan plan = plan_memory(m, TestTarget());
  for (const Instruction* v : {c, t, s}) EXPECT_EQ(plan.buffers.at(v).offset % 64, 0);
  // c and t are live together (c is read last, by the add).
  int64_t co = plan.buffers.at(c).offset, to = plan.buffers.at(t).offset;
  EXPECT_TRUE(co + 64 <= to || to + 64 <= co);
}

TEST(MemoryPlanningTest, OutputsThatAreParametersConstantsOrRepeatsAreCopied) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {2, 3}), "x");
  auto* c = b.scalar(1, DType::kF32);
  auto* e = b.unary(Opcode::kExp, x);
  auto* r = b.reshape(e, {6});
  m.entry()->set_outputs({e, x, c, r, e});
  MemoryPlan plan = plan_memory(m, TestTarget());
  EXPECT_EQ(plan.buffers.at(e).kind, BufferKind::kOutput);
  EXPECT_EQ(plan.buffers.at(e).output_index, 0);
  EXPECT_EQ(plan.buffers.at(c).kind, BufferKind::kConstant);
  EXPECT_EQ(plan.buffers.at(r).kind, BufferKind::kAlias);
  EXPECT_EQ(plan.buffers.at(r).alias_of, e);
  EXPECT_EQ(plan.storage_owner(r), e);
  ASSERT_EQ(plan.output_copies.size(), 4u);
  EXPECT_EQ(plan.output_copies[0].source, x);
  EXPECT_EQ(plan.output_copies[0].output_index, 1);
  EXPECT_EQ(plan.output_copies[1].source, c);
  EXPECT_EQ(plan.output_copies[2].source, r);  // e is output 0 already
  EXPECT_EQ(plan.output_copies[3].output_index, 4);
  EXPECT_EQ(plan.arena_bytes, 0);
  EXPECT_EQ(plan.argument_bytes, 24);
  EXPECT_EQ(plan.constant_bytes, 4);
  EXPECT_EQ(plan.output_bytes, 24 + 24 + 4 + 24 + 24);
  EXPECT_EQ(plan.peak_bytes(), 24 + 4 + 100);
}

// expand_dims(f(x)) as an output (a traced map's image): f writes straight into the output.
TEST(MemoryPlanningTest, AReshapedOutputIsComputedStraightIntoTheOutput) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {2, 3}), "x");
  auto* e = b.unary(Opcode::kExp, x);
  auto* r = b.reshape(e, {2, 3, 1});
  m.entry()->set_outputs({r});
  MemoryPlan plan = plan_memory(m, TestTarget());
  EXPECT_EQ(plan.buffers.at(e).kind, BufferKind::kOutput);
  EXPECT_EQ(plan.buffers.at(e).output_index, 0);
  EXPECT_TRUE(plan.output_copies.empty());
  EXPECT_EQ(plan.arena_bytes, 0);
}

// w' = w - 0.1 * g, aliased to w, with optional extra readers of w.
struct SgdStep {
  ir::Module m{"sgd"};
  ir::Builder b{m.entry()};
  Instruction* w = b.parameter(Shape(DType::kF32, {256}), "w");
  Instruction* g = b.parameter(Shape(DType::kF32, {256}), "g");
  Instruction* update = b.binary(Opcode::kSub, w, b.binary(Opcode::kMul, b.full(g->shape(), 0.1), g));
};

TEST(MemoryPlanningTest, DonatesTheVariableUpdateIntoTheParameter) {
  SgdStep s;
  auto* norm = s.b.reduce(Opcode::kReduceSum, s.b.binary(Opcode::kMul, s.w, s.w), {0});  // read before
  s.m.entry()->set_outputs({norm, s.update});
  s.m.add_alias({1, 0});
  MemoryPlan plan = plan_memory(s.m, TestTarget());
  const BufferInfo& u = plan.buffers.at(s.update);
  EXPECT_EQ(u.kind, BufferKind::kDonated);
  EXPECT_EQ(u.parameter_index, 0);
  EXPECT_TRUE(plan.output_copies.empty());
  EXPECT_EQ(plan.output_bytes, 4);  // only the fresh scalar output
}

TEST(MemoryPlanningTest, DonatesIntoALoopFusionThatReadsTheParameterElementwise) {
  SgdStep s;
  s.m.entry()->set_outputs({s.update});
  s.m.add_alias({0, 0});
  ElementwiseFusionPass().run(s.m);
  MemoryPlan plan = plan_memory(s.m, TestTarget());
  EXPECT_EQ(plan.buffers.at(s.m.entry()->outputs()[0]).kind, BufferKind::kDonated);
  EXPECT_EQ(plan.arena_bytes, 0);
}

TEST(MemoryPlanningTest, CopiesTheUpdateWhenTheParameterIsReadAfterIt) {
  SgdStep s;
  auto* later_exp = s.b.unary(Opcode::kExp, s.w);
  auto* later = s.b.reduce(Opcode::kReduceSum, later_exp, {0});
  s.m.entry()->set_outputs({s.update, later});  // post order: update, then the later read
  s.m.add_alias({0, 0});
  MemoryPlan plan = plan_memory(s.m, TestTarget());
  EXPECT_EQ(plan.buffers.at(s.update).kind, BufferKind::kArena);
  ASSERT_EQ(plan.output_copies.size(), 1u);
  EXPECT_EQ(plan.output_copies[0].source, s.update);
  EXPECT_EQ(plan.output_copies[0].output_index, 0);
  bool explained = false;
  for (const std::string& n : plan.notes) explained = explained || n.find("reads the parameter after") != std::string::npos;
  EXPECT_TRUE(explained);
  // The update stays live to the end of the step: the later reduce cannot take its slot.
  EXPECT_NE(plan.buffers.at(later_exp).offset, plan.buffers.at(s.update).offset);
}

TEST(MemoryPlanningTest, CopiesTheUpdateWhenItReadsTheParameterAtOtherIndices) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* w = b.parameter(Shape(DType::kF32, {4, 4}), "w");
  auto* x = b.parameter(Shape(DType::kF32, {4, 4}), "x");
  m.entry()->set_outputs({b.dot_general(w, x, kMatmul)});
  m.add_alias({0, 0});
  MemoryPlan plan = plan_memory(m, TestTarget());
  ASSERT_EQ(plan.output_copies.size(), 1u);
  EXPECT_EQ(plan.buffers.at(m.entry()->outputs()[0]).kind, BufferKind::kArena);
}

TEST(MemoryPlanningTest, ADynamicUpdateSliceOfADyingValueWritesIntoItsSlot) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {16, 8}), "x");
  auto* u = b.parameter(Shape(DType::kF32, {1, 8}), "u");
  auto* i = b.parameter(Shape(DType::kI32, {}), "i");
  auto* stacked = b.unary(Opcode::kExp, x);  // an arena value read only by the update
  auto* updated = b.dynamic_update_slice(stacked, u, {i, b.scalar(0, DType::kI32)});
  m.entry()->set_outputs({b.unary(Opcode::kNeg, updated)});
  MemoryPlan plan = plan_memory(m, TestTarget());
  EXPECT_EQ(plan.buffers.at(updated).offset, plan.buffers.at(stacked).offset);
  EXPECT_EQ(plan.arena_bytes, 16 * 8 * 4);
}

TEST(MemoryPlanningTest, ADynamicUpdateSliceKeepsItsOperandWhenItIsReadLater) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {16, 8}), "x");
  auto* u = b.parameter(Shape(DType::kF32, {1, 8}), "u");
  auto* stacked = b.unary(Opcode::kExp, x);
  auto* zero = b.scalar(0, DType::kI32);
  auto* updated = b.dynamic_update_slice(stacked, u, {zero, zero});
  m.entry()->set_outputs({b.binary(Opcode::kAdd, updated, stacked)});  // the old value is read after
  MemoryPlan plan = plan_memory(m, TestTarget());
  EXPECT_NE(plan.buffers.at(updated).offset, plan.buffers.at(stacked).offset);
}

TEST(MemoryPlanningTest, DonatesALoopCarriedBufferToItsDynamicUpdateSlice) {
  // A while body that writes row i of its carried [16, 8] buffer (a scan's stacked output):
  // with output 0 aliased to parameter 0 the update runs in the parameter's storage.
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* ys = b.parameter(Shape(DType::kF32, {16, 8}), "ys");
  auto* y = b.parameter(Shape(DType::kF32, {1, 8}), "y");
  auto* i = b.parameter(Shape(DType::kI32, {}), "i");
  auto* updated = b.dynamic_update_slice(ys, b.unary(Opcode::kTanh, y), {i, b.scalar(0, DType::kI32)});
  m.entry()->set_outputs({updated});
  m.add_alias({0, 0});
  MemoryPlan plan = plan_memory(m, TestTarget());
  EXPECT_EQ(plan.buffers.at(updated).kind, BufferKind::kDonated);
  EXPECT_TRUE(plan.output_copies.empty());
  EXPECT_EQ(plan.output_bytes, 0);
  EXPECT_LT(plan.arena_bytes, 16 * 8 * 4);  // the tanh only: no [16, 8] copy anywhere
}

TEST(MemoryPlanningTest, AnUnchangedVariableNeedsNoCopy) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* w = b.parameter(Shape(DType::kF32, {4}), "w");
  m.entry()->set_outputs({w});
  m.add_alias({0, 0});
  MemoryPlan plan = plan_memory(m, TestTarget());
  EXPECT_TRUE(plan.output_copies.empty());
  EXPECT_EQ(plan.peak_bytes(), 16);
}

TEST(MemoryPlanningTest, LoopFusionThatBroadcastsAnOperandDoesNotOverwriteIt) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {8}), "x");
  auto* r = b.reshape(b.unary(Opcode::kExp, x), {1, 8});  // arena value, aliased
  auto* bc = b.broadcast_in_dim(b.reshape(r, {8}), {8, 1}, {0});
  auto* t = b.reshape(bc, {1, 8});  // same bytes as bc: [8,1] -> [1,8]
  m.entry()->set_outputs({b.binary(Opcode::kAdd, t, r)});
  ElementwiseFusionPass().run(m);
  MemoryPlan plan = plan_memory(m, TestTarget());
  const Instruction* exp = r->operand(0);
  EXPECT_EQ(plan.buffers.at(exp).kind, BufferKind::kArena);
  EXPECT_EQ(plan.buffers.at(m.entry()->outputs()[0]).kind, BufferKind::kOutput);
}

TEST(MemoryPlanningTest, LargestFittingBatchMatchesABruteForceSearch) {
  // Fixed weights plus activations rounded up to 64-byte slots: monotone, not affine.
  auto peak = [](int64_t batch) { return 100000 + (batch * 3136 + 63) / 64 * 64 + (batch * 40 + 63) / 64 * 64; };
  for (int64_t limit : {int64_t{50000}, int64_t{103300}, int64_t{1 << 20}, int64_t{1 << 26}}) {
    int64_t expected = 0;
    while (expected < (1 << 20) && peak(expected + 1) <= limit) ++expected;
    int calls = 0;
    auto counted = [&](int64_t b) { ++calls; return peak(b); };
    EXPECT_EQ(largest_fitting_batch(counted, limit, /*known_batch=*/128), expected) << limit;
    EXPECT_LE(calls, 30);
  }
}

}  // namespace
}  // namespace kiln::compiler
