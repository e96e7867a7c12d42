#include "kiln/compiler/passes/loop_invariant_hoisting.h"

#include <gtest/gtest.h>

#include "kiln/ir/builder.h"
#include "kiln/ir/reference_eval.h"
#include "tests/compiler/test_target.h"

namespace kiln::compiler {
namespace {

using ir::Opcode;
using testing::run_and_print;

const Shape kCounter(DType::kI32, {});
const Shape kVec(DType::kF32, {2});

// Loop (i, acc, w) while i < 3: acc = acc * exp(w) + i-dependent term; w passes through.
struct Loop {
  ir::Module m{"m"};
  ir::Instruction* loop = nullptr;

  explicit Loop(bool exp_of_acc = false) {
    ir::Computation* cond = m.add_computation("cond");
    ir::Builder cb(cond);
    ir::Instruction* ci = cb.parameter(kCounter, "i");
    cb.parameter(kVec, "acc");
    cb.parameter(kVec, "w");
    cond->set_outputs({cb.compare(ir::Comparison::kLt, ci, cb.scalar(3, DType::kI32))});
    ir::Computation* body = m.add_computation("body");
    ir::Builder bb(body);
    ir::Instruction* i = bb.parameter(kCounter, "i");
    ir::Instruction* acc = bb.parameter(kVec, "acc");
    ir::Instruction* w = bb.parameter(kVec, "w");
    ir::Instruction* scale = bb.unary(Opcode::kExp, exp_of_acc ? acc : w);
    ir::Instruction* step = bb.broadcast_in_dim(bb.convert(i, DType::kF32), {2}, {});
    body->set_outputs({bb.binary(Opcode::kAdd, i, bb.scalar(1, DType::kI32)),
                       bb.binary(Opcode::kAdd, bb.binary(Opcode::kMul, acc, scale), step), w});
    ir::Builder b(m.entry());
    ir::Instruction* a0 = b.parameter(kVec, "acc0");
    ir::Instruction* w0 = b.parameter(kVec, "w");
    loop = b.while_loop({b.scalar(0, DType::kI32), a0, w0}, cond, body, 3);
    m.entry()->set_outputs({b.get_tuple_element(loop, 1)});
  }

  std::vector<HostTensor> run() {
    std::vector<HostTensor> args = {HostTensor::from_vector<float>({2}, {1.0f, -2.0f}),
                                    HostTensor::from_vector<float>({2}, {0.5f, -0.25f})};
    return ir::evaluate(m, args);
  }
};

TEST(LoopInvariantHoistingPassTest, MovesWorkOnPassThroughValuesBeforeTheLoop) {
  Loop l;
  const std::vector<float> before = l.run()[0].to_vector<float>();
  LoopInvariantHoistingPass pass;
  bool changed = false;
  const std::string text = run_and_print(pass, l.m, &changed);
  EXPECT_TRUE(changed);
  // exp(w) is computed in the entry and carried into the body as a fifth loop value.
  const size_t entry = text.find("entry {");
  EXPECT_NE(text.find("exp(", entry), std::string::npos) << text;
  EXPECT_EQ(text.substr(0, entry).find("exp("), std::string::npos) << text;
  EXPECT_NE(text.find("f32[2] parameter(3) \"hoisted."), std::string::npos) << text;
  ASSERT_EQ(pass.notes().size(), 1u);
  EXPECT_NE(pass.notes()[0].find("hoisted f32[2] exp("), std::string::npos) << pass.notes()[0];
  EXPECT_EQ(l.run()[0].to_vector<float>(), before);
}

TEST(LoopInvariantHoistingPassTest, LeavesWorkOnLoopCarriedValuesInside) {
  Loop l(/*exp_of_acc=*/true);
  LoopInvariantHoistingPass pass;
  bool changed = true;
  const std::string text = run_and_print(pass, l.m, &changed);
  EXPECT_FALSE(changed);
  EXPECT_EQ(text.find("exp(", text.find("entry {")), std::string::npos) << text;
}

}  // namespace
}  // namespace kiln::compiler
