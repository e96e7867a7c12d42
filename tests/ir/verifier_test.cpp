#include "kiln/ir/verifier.h"

#include <gtest/gtest.h>

#include "kiln/ir/builder.h"
#include "tests/testing/expect_error.h"

namespace kiln::ir {
namespace {

class VerifierTest : public ::testing::Test {
 protected:
  /// entry: w' = w - 0.1 * exp(x + w), aliased to w; the add+exp is a fusion.
  void SetUp() override {
    body_ = m_.add_computation("fused_add_exp");
    Builder fb(body_);
    auto* p0 = fb.parameter(s_, "p0");
    auto* p1 = fb.parameter(s_, "p1");
    body_->set_outputs({fb.unary(Opcode::kExp, fb.binary(Opcode::kAdd, p0, p1))});
    x_ = b_.parameter(s_, "x");
    w_ = b_.parameter(s_, "w");
    Attrs attrs;
    attrs.body = body_;
    fusion_ = b_.add(Opcode::kFusion, {x_, w_}, attrs, &s_);
    update_ = b_.binary(Opcode::kSub, w_, b_.binary(Opcode::kMul, b_.full(s_, 0.1), fusion_));
    m_.entry()->set_outputs({update_});
    m_.add_alias({.output_index = 0, .parameter_index = 1});
  }

  Shape s_{DType::kF32, {4}};
  Module m_{"step"};
  Builder b_{m_.entry()};
  Computation* body_ = nullptr;
  Instruction *x_ = nullptr, *w_ = nullptr, *fusion_ = nullptr, *update_ = nullptr;
};

TEST_F(VerifierTest, AcceptsAWellFormedModule) { EXPECT_NO_THROW(verify(m_)); }

TEST_F(VerifierTest, CatchesAShapeThatDisagreesWithInference) {
  m_.entry()->add(Opcode::kExp, Shape(DType::kF32, {5}), {x_});
  KILN_EXPECT_ERROR(verify(m_), InternalError, "exp declares f32[5] but its operands give f32[4]");
}

TEST_F(VerifierTest, CatchesAnInstructionThatFailsShapeInference) {
  m_.entry()->add(Opcode::kAdd, s_, {x_, m_.entry()->add_parameter(Shape(DType::kI32, {4}), "i")});
  KILN_EXPECT_ERROR(verify(m_), InternalError, "fails shape inference: [add] operands must have equal dtypes");
}

TEST_F(VerifierTest, CatchesAnAliasToAMissingParameter) {
  m_.mutable_aliases()[0].parameter_index = 7;
  KILN_EXPECT_ERROR(verify(m_), InternalError, "alias output 0 -> parameter 7 names a missing parameter");
}

TEST_F(VerifierTest, CatchesAnAliasBetweenUnequalShapes) {
  auto* other = b_.parameter(Shape(DType::kF32, {2}), "v");
  m_.entry()->add_output(b_.unary(Opcode::kNeg, other));
  m_.add_alias({.output_index = 1, .parameter_index = 0});
  KILN_EXPECT_ERROR(verify(m_), InternalError, "joins f32[2] with f32[4]; shapes must be equal");
}

TEST_F(VerifierTest, CatchesAParameterAliasedTwice) {
  m_.entry()->add_output(update_);
  m_.add_alias({.output_index = 1, .parameter_index = 1});
  KILN_EXPECT_ERROR(verify(m_), InternalError, "parameter aliased twice");
}

TEST_F(VerifierTest, CatchesAFusionBodyWhoseParametersDoNotMatch) {
  Builder(body_).parameter(s_, "extra");
  KILN_EXPECT_ERROR(verify(m_), InternalError, "passes 2 operands to fused_add_exp, which takes 3 parameters");
}

TEST_F(VerifierTest, CatchesAFusionBodyReturningTheWrongShape) {
  Builder fb(body_);
  body_->set_outputs({fb.reduce(Opcode::kReduceSum, body_->outputs()[0], {0})});
  KILN_EXPECT_ERROR(verify(m_), InternalError, "is f32[4] but its body fused_add_exp returns f32[]");
}

TEST_F(VerifierTest, CatchesAFusionBodyWithTwoOutputs) {
  body_->add_output(body_->parameter(0));
  KILN_EXPECT_ERROR(verify(m_), InternalError, "has 2 outputs, expected 1");
}

TEST_F(VerifierTest, VerifiesFusionBodiesThemselves) {
  body_->add(Opcode::kNeg, Shape(DType::kF32, {3}), {body_->parameter(0)});
  KILN_EXPECT_ERROR(verify(m_), InternalError, "in fused_add_exp: %");
}

TEST_F(VerifierTest, CatchesAFusionWhoseBodyIsNotInTheModule) {
  Module other("other");
  fusion_->mutable_attrs().body = other.entry();
  KILN_EXPECT_ERROR(verify(m_), InternalError, "which this module does not own");
}

TEST_F(VerifierTest, CatchesEmptyOutputs) {
  m_.mutable_aliases().clear();
  m_.entry()->set_outputs({});
  KILN_EXPECT_ERROR(verify(m_), InternalError, "in entry: the computation has no outputs");
}

TEST_F(VerifierTest, CatchesAnOutputFromAnotherComputation) {
  m_.entry()->add_output(body_->parameter(0));
  KILN_EXPECT_ERROR(verify(m_), InternalError, "output 1 is not an instruction of this computation");
}

TEST_F(VerifierTest, CatchesAnOperandFromAnotherComputation) {
  auto* exp = b_.unary(Opcode::kExp, x_);
  exp->replace_operand(0, body_->parameter(0));
  KILN_EXPECT_ERROR(verify(m_), InternalError, "operand 0 of %");
}

TEST_F(VerifierTest, CatchesNonContiguousParameterIndices) {
  w_->mutable_attrs().parameter_index = 5;
  KILN_EXPECT_ERROR(verify(m_), InternalError, "has parameter_index 5 but sits at position 1");
}

TEST_F(VerifierTest, CatchesACycle) {
  auto* a = b_.unary(Opcode::kExp, x_);
  auto* b = b_.unary(Opcode::kNeg, a);
  a->replace_operand(0, b);
  KILN_EXPECT_ERROR(verify(m_), InternalError, "a cycle runs through");
}

TEST_F(VerifierTest, ListsEveryProblemAtOnce) {
  m_.entry()->add(Opcode::kExp, Shape(DType::kF32, {5}), {x_});
  m_.mutable_aliases()[0].parameter_index = 7;
  try {
    verify(m_);
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("(2 problems)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("declares f32[5]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("names a missing parameter"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace kiln::ir
