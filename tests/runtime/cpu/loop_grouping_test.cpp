// Horizontal fusion's safety rule (runtime/cpu/loop_grouping.h) against hand-made memory plans:
// a group may write a buffer it reads only where both walk the same element; anything the
// planner could reuse in a way a single pass would break keeps the kernels apart.
#include <gtest/gtest.h>

#include "kiln/ir/builder.h"
#include "kiln/runtime/cpu/loop_grouping.h"

namespace kiln::cpu {
namespace {

using compiler::BufferInfo;
using compiler::BufferKind;
using ir::Instruction;
using ir::Opcode;

const Shape kShape(DType::kF32, {4, 4});

class LoopGroupingTest : public ::testing::Test {
 protected:
  LoopGroupingTest() : module_("m"), entry_(module_.add_computation("entry")), b_(entry_) {
    x_ = b_.parameter(kShape, "x");
    y_ = b_.parameter(kShape, "y");
    plan_.buffers[x_] = {BufferKind::kParameter, 0, 64, 0};
    plan_.buffers[y_] = {BufferKind::kParameter, 0, 64, 1};
  }

  // A loop fusion of `operands` (of one shape) whose body adds 1 to the sum of its parameters, each read
  // directly or (`transposed`) through a transpose.
  Instruction* loop(std::vector<Instruction*> operands, bool transposed = false) {
    ir::Computation* body = module_.add_computation("body" + std::to_string(module_.computations().size()));
    ir::Builder bb(body);
    Instruction* acc = bb.full(operands[0]->shape(), 1);
    for (Instruction* op : operands) {
      Instruction* p = bb.parameter(op->shape(), "");
      acc = bb.binary(Opcode::kAdd, acc, transposed ? bb.transpose(p, {1, 0}) : p);
    }
    body->add_output(acc);
    ir::Attrs a;
    a.body = body;
    a.fusion_kind = ir::FusionKind::kLoop;
    return entry_->add(Opcode::kFusion, acc->shape(), operands, a);
  }

  void arena(const Instruction* v, int64_t offset) { plan_.buffers[v] = {BufferKind::kArena, offset, 64}; }
  void donated(const Instruction* v, int parameter) { plan_.buffers[v] = {BufferKind::kDonated, 0, 64, parameter}; }

  ir::Module module_;
  ir::Computation* entry_;
  ir::Builder b_;
  Instruction *x_, *y_;
  compiler::MemoryPlan plan_;
};

TEST_F(LoopGroupingTest, SeparateBuffersGroup) {
  Instruction* f1 = loop({x_});
  Instruction* f2 = loop({y_, f1});
  arena(f1, 0);
  arena(f2, 64);
  EXPECT_TRUE(can_join({f1}, *f2, plan_));
  GroupedLoop g = merge_group(module_, {f1, f2});
  EXPECT_EQ(g.operands, (std::vector<const Instruction*>{x_, y_}));  // f1's value stays inside
  EXPECT_EQ(g.body->outputs().size(), 2u);
}

TEST_F(LoopGroupingTest, WritingAnInputInPlaceGroupsOnlyWhenReadElementwise) {
  Instruction* f1 = loop({x_});
  Instruction* f2 = loop({y_});
  arena(f1, 0);
  donated(f2, 0);  // f2 is written over x, which only f1 reads
  EXPECT_TRUE(can_join({f1}, *f2, plan_));

  Instruction* t1 = loop({x_}, /*transposed=*/true);
  arena(t1, 0);
  EXPECT_FALSE(can_join({t1}, *f2, plan_)) << "f2 would overwrite x before t1 reads it transposed";
}

TEST_F(LoopGroupingTest, PartlyOverlappingBuffersDoNotGroup) {
  Instruction* f0 = loop({x_});
  Instruction* f1 = loop({f0});
  Instruction* f2 = loop({y_});
  arena(f0, 0);
  arena(f1, 128);
  arena(f2, 32);  // over half of f0, which f1 reads
  EXPECT_FALSE(can_join({f1}, *f2, plan_));
  arena(f2, 0);  // exactly f0's buffer: f1 reads each element before f2 writes it
  EXPECT_TRUE(can_join({f1}, *f2, plan_));
  arena(f2, 160);  // over part of f1's own output
  EXPECT_FALSE(can_join({f1}, *f2, plan_));
}

TEST_F(LoopGroupingTest, AMemberReadThroughATransposeDoesNotGroup) {
  Instruction* f1 = loop({x_});
  Instruction* f2 = loop({f1}, /*transposed=*/true);
  arena(f1, 0);
  arena(f2, 64);
  EXPECT_FALSE(can_join({f1}, *f2, plan_));
}

TEST_F(LoopGroupingTest, OtherShapesAndPrecisionsDoNotGroup) {
  Instruction* f1 = loop({x_});
  Instruction* z = b_.parameter(Shape(DType::kF32, {16}), "z");
  plan_.buffers[z] = {BufferKind::kParameter, 0, 64, 2};
  Instruction* f2 = loop({z});
  arena(f1, 0);
  arena(f2, 64);
  EXPECT_FALSE(can_join({f1}, *f2, plan_));

  Instruction* w = b_.parameter(Shape(DType::kF64, {4, 4}), "w");
  plan_.buffers[w] = {BufferKind::kParameter, 0, 128, 3};
  ir::Computation* body = module_.add_computation("f64body");
  ir::Builder bb(body);
  body->add_output(bb.convert(bb.parameter(w->shape(), ""), DType::kF32));
  ir::Attrs a;
  a.body = body;
  Instruction* f3 = entry_->add(Opcode::kFusion, kShape, {w}, a);
  arena(f3, 128);
  EXPECT_FALSE(can_join({f1}, *f3, plan_)) << "f1 computes in float registers, f3 in double";
}

}  // namespace
}  // namespace kiln::cpu
