// The elementwise table's newer rows (sin, cos, expm1, atan2, floor, ceil, round, mod) against
// NumPy 1.24's values, written here (np.float32 inputs; the sin/cos/expm1/atan2 values within
// 4 ulps, since NumPy's own f32 math may differ from libm's in the last bit), and the shape
// inference dtype rule that the table's dtypes column makes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/ir/elementwise.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/ir/shape_inference.h"
#include "tests/ir/reference_eval_test.h"
#include "tests/testing/expect_error.h"

namespace kiln::ir {
namespace {

using ReferenceEvalElementwiseTest = ReferenceEvalFixture;

void expect_floats_near(const std::vector<float>& got, const std::vector<float>& numpy) {
  ASSERT_EQ(got.size(), numpy.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], numpy[i]) << "element " << i;
}

TEST_F(ReferenceEvalElementwiseTest, SinCosExpm1MatchNumPy) {
  auto* x = arg<float>({4}, {0.5f, -1.25f, 3.0f, 1e-3f});
  // np.sin / np.cos / np.expm1 of np.float32([0.5, -1.25, 3, 1e-3])
  expect_floats_near(eval_as<float>(b_.unary(Opcode::kSin, x)),
                     {0.4794255495071411f, -0.9489846229553223f, 0.14112000167369843f, 0.0009999999310821295f});
  expect_floats_near(eval_as<float>(b_.unary(Opcode::kCos, x)),
                     {0.8775825500488281f, 0.3153223693370819f, -0.9899924993515015f, 0.9999995231628418f});
  expect_floats_near(eval_as<float>(b_.unary(Opcode::kExpm1, x)),
                     {0.6487212777137756f, -0.7134951949119568f, 19.08553695678711f, 0.0010005002841353416f});
}

TEST_F(ReferenceEvalElementwiseTest, Atan2PicksTheQuadrantAsNumPy) {
  auto* a = arg<float>({5}, {1, -1, -1, 1, 0});
  auto* b = arg<float>({5}, {1, 1, -1, -1, -1});
  // np.arctan2(a, b)
  expect_floats_near(eval_as<float>(b_.binary(Opcode::kAtan2, a, b)),
                     {0.7853981256484985f, -0.7853981256484985f, -2.356194496154785f, 2.356194496154785f,
                      3.1415927410125732f});
}

TEST_F(ReferenceEvalElementwiseTest, FloorCeilAndRoundHalvesToEvenAsNumPy) {
  auto* x = arg<float>({8}, {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, -1.25f, 3.7f});
  EXPECT_EQ(eval_as<float>(b_.unary(Opcode::kRound, x)), (std::vector<float>{-2, -2, -0.f, 0, 2, 2, -1, 4}));
  EXPECT_TRUE(std::signbit(eval_as<float>(b_.unary(Opcode::kRound, x))[2])) << "round(-0.5) is -0, as NumPy's";
  EXPECT_EQ(eval_as<float>(b_.unary(Opcode::kFloor, x)), (std::vector<float>{-3, -2, -1, 0, 1, 2, -2, 3}));
  EXPECT_EQ(eval_as<float>(b_.unary(Opcode::kCeil, x)), (std::vector<float>{-2, -1, -0.f, 1, 2, 3, -1, 4}));
  // bf16 and f16 compute in f32 and round once: integers and halves are exact there.
  auto* h = arg(HostTensor::from_vector<float>({3}, {2.5f, 3.5f, -7.5f}).astype(DType::kBF16));
  EXPECT_EQ(eval(b_.unary(Opcode::kRound, h)).to_vector<float>(), (std::vector<float>{2, 4, -8}));
}

TEST_F(ReferenceEvalElementwiseTest, ModTakesTheDivisorsSignAsNumPyAndTensorFlow) {
  auto* a = arg<float>({8}, {7, -7, 7, -7, 6, -6, 5.5f, -5.5f});
  auto* b = arg<float>({8}, {2, 2, -2, -2, 3, 3, 2, 2});
  // np.mod(a, b); a zero result keeps fmod's sign (TensorFlow's floormod), so -6 mod 3 is -0.
  EXPECT_EQ(eval_as<float>(b_.binary(Opcode::kMod, a, b)), (std::vector<float>{1, 1, -1, -1, 0, 0, 1.5f, 0.5f}));
  auto* i = arg<int32_t>({8}, {7, -7, 7, -7, 6, -6, 0, -9});
  auto* j = arg<int32_t>({8}, {2, 2, -2, -2, 3, -3, 5, 4});
  EXPECT_EQ(eval_as<int32_t>(b_.binary(Opcode::kMod, i, j)), (std::vector<int32_t>{1, 1, -1, -1, 0, 0, 0, 3}));
  // Not NumPy's (it warns and gives 0): x mod 0 is x, and INT_MIN mod -1 is 0, so no input is
  // undefined behaviour.
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  auto* p = arg<int32_t>({3}, {5, -5, kMin});
  auto* q = arg<int32_t>({3}, {0, 0, -1});
  EXPECT_EQ(eval_as<int32_t>(b_.binary(Opcode::kMod, p, q)), (std::vector<int32_t>{5, -5, 0}));
  auto* u = arg<uint8_t>({3}, {200, 7, 9});
  auto* v = arg<uint8_t>({3}, {7, 0, 9});
  EXPECT_EQ(eval_as<uint8_t>(b_.binary(Opcode::kMod, u, v)), (std::vector<uint8_t>{4, 7, 0}));
}

TEST_F(ReferenceEvalElementwiseTest, SignedZerosOfMaxAndMinFollowTheTable) {
  // max(a, b) is a where a > b or a is NaN, else b: the same formula in every engine, so even
  // signed zeros agree (max(-0, +0) = +0, max(+0, -0) = -0).
  auto* a = arg<float>({2}, {-0.f, 0.f});
  auto* b = arg<float>({2}, {0.f, -0.f});
  auto mx = eval_as<float>(b_.binary(Opcode::kMax, a, b));
  EXPECT_FALSE(std::signbit(mx[0]));
  EXPECT_TRUE(std::signbit(mx[1]));
}

TEST_F(ReferenceEvalElementwiseTest, ShapeInferenceTakesEachRowsDTypesColumn) {
  auto* i = arg<int32_t>({2}, {1, 2});
  KILN_EXPECT_ERROR(b_.unary(Opcode::kSin, i), DTypeError, "needs a floating-point operand");
  KILN_EXPECT_ERROR(b_.binary(Opcode::kAtan2, i, i), DTypeError, "needs a floating-point operand");
  auto* p = arg<bool>({2}, {true, false});
  KILN_EXPECT_ERROR(b_.binary(Opcode::kMod, p, p), DTypeError, "does not take bool operands");
  KILN_EXPECT_ERROR(b_.binary(Opcode::kDiv, p, p), DTypeError, "does not take bool operands");
  EXPECT_EQ(b_.binary(Opcode::kMod, i, i)->dtype(), DType::kI32);
  EXPECT_EQ(b_.binary(Opcode::kMax, p, p)->dtype(), DType::kBool);
  // Every row's dtypes column is what shape inference accepts.
  for (const elementwise::RowInfo& row : elementwise::kRows)
    for (DType t : {DType::kF32, DType::kBF16, DType::kI32, DType::kU8, DType::kBool}) {
      Shape s(t, {2});
      std::vector<Shape> operands(static_cast<size_t>(row.arity), s);
      bool accepted = true;
      try {
        infer_shape(row.opcode, operands, {}, nullptr, "");
      } catch (const DTypeError&) {
        accepted = false;
      }
      EXPECT_EQ(accepted, elementwise::accepts(row.dtypes, t)) << row.name << " " << t;
    }
}

}  // namespace
}  // namespace kiln::ir
