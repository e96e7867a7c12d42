// while, conditional, get_tuple_element, dynamic_slice and dynamic_update_slice: construction
// checks, verifier, printer and reference values (hand-computed).
#include <gtest/gtest.h>

#include "kiln/ir/builder.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/ir/verifier.h"
#include "tests/testing/expect_error.h"

namespace kiln::ir {
namespace {

const Shape kCounter(DType::kI32, {});
const Shape kVec(DType::kF32, {3});

// Carried (i, acc, x): loop while i < limit; acc += x, i += 1.
class WhileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cond_ = m_.add_computation("cond");
    Builder cb(cond_);
    auto* i = cb.parameter(kCounter, "i");
    cb.parameter(kVec, "acc");
    cb.parameter(kVec, "x");
    cond_->set_outputs({cb.compare(Comparison::kLt, i, cb.scalar(5, DType::kI32))});
    body_ = m_.add_computation("body");
    Builder bb(body_);
    auto* bi = bb.parameter(kCounter, "i");
    auto* acc = bb.parameter(kVec, "acc");
    auto* x = bb.parameter(kVec, "x");
    body_->set_outputs({bb.binary(Opcode::kAdd, bi, bb.scalar(1, DType::kI32)),
                        bb.binary(Opcode::kAdd, acc, x), x});
  }

  // The entry runs the loop from counter `start` and outputs the final counter and acc.
  Instruction* build_entry(int64_t trip_count = -1) {
    auto* start = b_.parameter(kCounter, "start");
    auto* x = b_.parameter(kVec, "x");
    auto* loop = b_.while_loop({start, b_.full(kVec, 0.0), x}, cond_, body_, trip_count);
    m_.entry()->set_outputs({b_.get_tuple_element(loop, 0), b_.get_tuple_element(loop, 1)});
    return loop;
  }

  std::vector<HostTensor> run(int32_t start) {
    std::vector<HostTensor> args = {HostTensor::from_vector<int32_t>({}, {start}),
                                    HostTensor::from_vector<float>({3}, {1.5f, -2.0f, 0.25f})};
    return evaluate(m_, args);
  }

  Module m_{"loop"};
  Builder b_{m_.entry()};
  Computation* cond_ = nullptr;
  Computation* body_ = nullptr;
};

TEST_F(WhileTest, RunsTheBodyUntilTheConditionFails) {
  build_entry(/*trip_count=*/5);
  verify(m_);
  std::vector<HostTensor> out = run(0);
  EXPECT_EQ(out[0].to_vector<int32_t>(), std::vector<int32_t>{5});
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{7.5f, -10.0f, 1.25f}));
}

TEST_F(WhileTest, ZeroIterationsReturnTheInitialValues) {
  build_entry();
  std::vector<HostTensor> out = run(9);
  EXPECT_EQ(out[0].to_vector<int32_t>(), std::vector<int32_t>{9});
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{0.0f, 0.0f, 0.0f}));
}

TEST_F(WhileTest, AWrongTripCountIsCaught) {
  build_entry(/*trip_count=*/4);
  KILN_EXPECT_ERROR(run(0), InternalError, "says trip_count=4 but ran 5 iterations");
}

TEST_F(WhileTest, PrintsItsComputationsAndTripCount) {
  Instruction* loop = build_entry(/*trip_count=*/5);
  EXPECT_EQ(describe(*loop).substr(describe(*loop).find(")")),
            "), condition=cond, body=body, trip_count=5");
  EXPECT_NE(to_string(m_).find("f32[3] get_tuple_element(%4), index=1"), std::string::npos) << to_string(m_);
}

TEST_F(WhileTest, RejectsABodyThatChangesACarriedShape) {
  body_->set_output(2, Builder(body_).binary(Opcode::kAdd, body_->parameter(0), body_->parameter(0)));
  KILN_EXPECT_ERROR(build_entry(), ShapeError,
                    "body body returns (i32[], f32[3], i32[]) but the carried values are (i32[], f32[3], f32[3])");
}

TEST_F(WhileTest, RejectsAConditionThatIsNotABoolScalar) {
  cond_->set_output(0, cond_->parameter(1));
  KILN_EXPECT_ERROR(build_entry(), ShapeError, "condition cond must return one bool[], returns (f32[3])");
}

TEST_F(WhileTest, RejectsCarriedValuesThatDoNotMatchTheParameters) {
  auto* x = b_.parameter(kVec, "x");
  KILN_EXPECT_ERROR(b_.while_loop({x, x, x}, cond_, body_), ShapeError,
                    "condition cond parameter 0 is i32[], the operand is f32[3]");
}

TEST_F(WhileTest, GetTupleElementChecksItsIndex) {
  Instruction* loop = build_entry();
  KILN_EXPECT_ERROR(b_.get_tuple_element(loop, 3), ShapeError, "index 3 is out of range: the while has 3 results");
}

TEST_F(WhileTest, VerifierRejectsAUseOfTheLoopOtherThanGetTupleElement) {
  Instruction* loop = build_entry();
  m_.entry()->add(Opcode::kNeg, loop->shape(), {loop});
  m_.entry()->add_output(m_.entry()->instructions().back().get());
  KILN_EXPECT_ERROR(verify(m_), InternalError, "its results are read with get_tuple_element");
}

TEST_F(WhileTest, VerifierRejectsAGetTupleElementOfTheWrongShape) {
  Instruction* loop = build_entry();
  Attrs a;
  a.tuple_index = 0;
  m_.entry()->add_output(m_.entry()->add(Opcode::kGetTupleElement, kVec, {loop}, a));
  KILN_EXPECT_ERROR(verify(m_), InternalError, "is f32[3] but result 0 of");
}

TEST_F(WhileTest, DeadCodeRemovalKeepsTheLoopComputations) {
  build_entry();
  m_.add_computation("unused");
  m_.remove_unused_computations();
  EXPECT_EQ(m_.computations().size(), 3u);
  verify(m_);
}

// Branches over x: f32[3]: {x * 2, x + 1, -x}.
class ConditionalTest : public ::testing::Test {
 protected:
  Computation* branch(const char* name, Opcode op, double c) {
    Computation* comp = m_.add_computation(name);
    Builder bb(comp);
    auto* x = bb.parameter(kVec, "x");
    comp->set_outputs({op == Opcode::kNeg ? bb.unary(op, x) : bb.binary(op, x, bb.full(kVec, c))});
    return comp;
  }

  std::vector<float> run(const Shape& selector_shape, const HostTensor& selector, std::vector<Computation*> branches) {
    auto* s = b_.parameter(selector_shape, "s");
    auto* x = b_.parameter(kVec, "x");
    auto* c = b_.conditional(s, {x}, std::move(branches));
    m_.entry()->set_outputs({b_.get_tuple_element(c, 0)});
    verify(m_);
    std::vector<HostTensor> args = {selector, HostTensor::from_vector<float>({3}, {1.0f, -2.0f, 0.5f})};
    return evaluate(m_, args)[0].to_vector<float>();
  }

  Module m_{"cond"};
  Builder b_{m_.entry()};
};

TEST_F(ConditionalTest, ABoolPredicatePicksTrueThenFalse) {
  auto pred = [](bool v) { return HostTensor::from_vector<bool>({}, {v}); };
  EXPECT_EQ(run(Shape(DType::kBool, {}), pred(true), {branch("twice", Opcode::kMul, 2), branch("inc", Opcode::kAdd, 1)}),
            (std::vector<float>{2.0f, -4.0f, 1.0f}));
}

TEST_F(ConditionalTest, AFalsePredicatePicksTheSecondBranch) {
  auto pred = HostTensor::from_vector<bool>({}, {false});
  EXPECT_EQ(run(Shape(DType::kBool, {}), pred, {branch("twice", Opcode::kMul, 2), branch("inc", Opcode::kAdd, 1)}),
            (std::vector<float>{2.0f, -1.0f, 1.5f}));
}

TEST_F(ConditionalTest, AnIndexPicksItsBranchAndOutOfRangePicksTheLast) {
  std::vector<Computation*> branches = {branch("twice", Opcode::kMul, 2), branch("inc", Opcode::kAdd, 1),
                                        branch("neg", Opcode::kNeg, 0)};
  EXPECT_EQ(run(kCounter, HostTensor::from_vector<int32_t>({}, {1}), branches), (std::vector<float>{2.0f, -1.0f, 1.5f}));
  std::vector<HostTensor> args = {HostTensor::from_vector<int32_t>({}, {7}),
                                  HostTensor::from_vector<float>({3}, {1.0f, -2.0f, 0.5f})};
  EXPECT_EQ(evaluate(m_, args)[0].to_vector<float>(), (std::vector<float>{-1.0f, 2.0f, -0.5f}));
  args[0] = HostTensor::from_vector<int32_t>({}, {-1});
  EXPECT_EQ(evaluate(m_, args)[0].to_vector<float>(), (std::vector<float>{-1.0f, 2.0f, -0.5f}));
}

TEST_F(ConditionalTest, RejectsBranchesThatReturnDifferentShapes) {
  Computation* odd = m_.add_computation("odd");
  Builder ob(odd);
  auto* x = ob.parameter(kVec, "x");
  odd->set_outputs({ob.reduce(Opcode::kReduceSum, x, {0})});
  auto* s = b_.parameter(Shape(DType::kBool, {}), "s");
  auto* xv = b_.parameter(kVec, "x");
  KILN_EXPECT_ERROR(b_.conditional(s, {xv}, {branch("twice", Opcode::kMul, 2), odd}), ShapeError,
                    "branch 1 returns (f32[]) but branch 0 returns (f32[3])");
}

TEST_F(ConditionalTest, RejectsABoolPredicateWithThreeBranches) {
  auto* s = b_.parameter(Shape(DType::kBool, {}), "s");
  auto* x = b_.parameter(kVec, "x");
  KILN_EXPECT_ERROR(b_.conditional(s, {x}, {branch("a", Opcode::kMul, 2), branch("b", Opcode::kAdd, 1),
                                            branch("c", Opcode::kNeg, 0)}),
                    ShapeError, "a bool predicate needs 2 branches (true, false), received 3");
}

TEST(DynamicSliceTest, TakesABoxAtClampedStarts) {
  Module m("ds");
  Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {4, 3}), "x");
  auto* i = b.parameter(kCounter, "i");
  auto* j = b.parameter(kCounter, "j");
  m.entry()->set_outputs({b.dynamic_slice(x, {i, j}, {2, 2})});
  verify(m);
  HostTensor xv = HostTensor::from_vector<float>({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  auto at = [&](int32_t a, int32_t c) {
    std::vector<HostTensor> args = {xv, HostTensor::from_vector<int32_t>({}, {a}),
                                    HostTensor::from_vector<int32_t>({}, {c})};
    return evaluate(m, args)[0].to_vector<float>();
  };
  EXPECT_EQ(at(1, 0), (std::vector<float>{3, 4, 6, 7}));
  EXPECT_EQ(at(9, 5), (std::vector<float>{7, 8, 10, 11}));  // clamped to (2, 1)
  EXPECT_EQ(at(-3, 1), (std::vector<float>{1, 2, 4, 5}));   // clamped to (0, 1)
}

TEST(DynamicSliceTest, UpdateWritesTheBoxAndKeepsTheRest) {
  Module m("dus");
  Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {3, 2}), "x");
  auto* u = b.parameter(Shape(DType::kF32, {1, 2}), "u");
  auto* i = b.parameter(kCounter, "i");
  m.entry()->set_outputs({b.dynamic_update_slice(x, u, {i, b.scalar(0, DType::kI32)})});
  verify(m);
  std::vector<HostTensor> args = {HostTensor::from_vector<float>({3, 2}, {0, 1, 2, 3, 4, 5}),
                                  HostTensor::from_vector<float>({1, 2}, {-1, -2}),
                                  HostTensor::from_vector<int32_t>({}, {1})};
  EXPECT_EQ(evaluate(m, args)[0].to_vector<float>(), (std::vector<float>{0, 1, -1, -2, 4, 5}));
}

TEST(DynamicSliceTest, RejectsMissingStartsAndOversizedBoxes) {
  Module m("bad");
  Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {4, 3}), "x");
  auto* i = b.parameter(kCounter, "i");
  KILN_EXPECT_ERROR(b.dynamic_slice(x, {i}, {1, 1}), ShapeError, "needs one start index per dim of f32[4,3] (2), received 1");
  KILN_EXPECT_ERROR(b.dynamic_slice(x, {i, i}, {5, 1}), ShapeError, "slice sizes [5,1] do not fit in f32[4,3]");
  auto* f = b.parameter(Shape(DType::kF32, {}), "f");
  KILN_EXPECT_ERROR(b.dynamic_slice(x, {i, f}, {1, 1}), DTypeError, "start indices must be i32 or i64 scalars");
}

}  // namespace
}  // namespace kiln::ir
