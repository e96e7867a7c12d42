// Hand-computed values for the reference evaluator's elementwise, shape, index, reduce,
// dot_general, random, collective and fusion ops (convolution and pooling are in
// reference_eval_contraction_test.cpp and reference_eval_window_test.cpp).
#include "kiln/ir/reference_eval.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/core/rng.h"
#include "tests/ir/reference_eval_test.h"
#include "tests/testing/expect_error.h"

namespace kiln::ir {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

using ReferenceEvalTest = ReferenceEvalFixture;

TEST_F(ReferenceEvalTest, UnaryMathFollowsXlaDefinitions) {
  auto* x = arg<float>({4}, {0.f, 4.f, -2.f, 0.5f});
  auto logistic = eval_as<float>(b_.unary(Opcode::kLogistic, x));
  EXPECT_FLOAT_EQ(logistic[0], 0.5f);
  EXPECT_FLOAT_EQ(logistic[2], 1.f / (1.f + std::exp(2.f)));
  EXPECT_FLOAT_EQ(eval_as<float>(b_.unary(Opcode::kRsqrt, x))[1], 0.5f);
  EXPECT_FLOAT_EQ(eval_as<float>(b_.unary(Opcode::kErf, x))[3], std::erf(0.5f));
  EXPECT_FLOAT_EQ(eval_as<float>(b_.unary(Opcode::kLog1p, x))[1], std::log1p(4.f));
  EXPECT_FLOAT_EQ(eval_as<float>(b_.unary(Opcode::kTanh, x))[2], std::tanh(-2.f));
  EXPECT_FLOAT_EQ(eval_as<float>(b_.unary(Opcode::kAbs, x))[2], 2.f);
  EXPECT_FLOAT_EQ(eval_as<float>(b_.unary(Opcode::kNeg, x))[3], -0.5f);
}

TEST_F(ReferenceEvalTest, SignKeepsZeroAndNaN) {
  auto* x = arg<float>({4}, {-2.f, 0.f, 3.f, kNaN});
  auto s = eval_as<float>(b_.unary(Opcode::kSign, x));
  EXPECT_EQ(s[0], -1.f);
  EXPECT_EQ(s[1], 0.f);
  EXPECT_EQ(s[2], 1.f);
  EXPECT_TRUE(std::isnan(s[3]));
  auto* i = arg<int32_t>({3}, {-5, 0, 9});
  EXPECT_EQ(eval_as<int32_t>(b_.unary(Opcode::kSign, i)), (std::vector<int32_t>{-1, 0, 1}));
}

TEST_F(ReferenceEvalTest, F64ComputesInF64) {
  auto* x = arg<double>({1}, {1.0});
  EXPECT_EQ(eval_as<double>(b_.unary(Opcode::kExp, x))[0], std::exp(1.0));
}

TEST_F(ReferenceEvalTest, Bf16ComputesInF32AndRoundsOnceToNearestEven) {
  // 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties go to the even 1.
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties go to the even 1 + 2^-6.
  auto* a = arg(HostTensor::from_vector<float>({2}, {1.f, 1.f}).astype(DType::kBF16));
  auto* c = arg(HostTensor::from_vector<float>({2}, {0.00390625f, 0.01171875f}).astype(DType::kBF16));
  HostTensor sum = eval(b_.binary(Opcode::kAdd, a, c));
  EXPECT_EQ(sum.dtype(), DType::kBF16);
  EXPECT_EQ(sum.to_vector<float>(), (std::vector<float>{1.f, 1.015625f}));
}

TEST_F(ReferenceEvalTest, IntegerDivisionTruncatesAndDefinesDivisionByZero) {
  auto* a = arg<int32_t>({5}, {7, -7, 7, 5, std::numeric_limits<int32_t>::min()});
  auto* b = arg<int32_t>({5}, {2, 2, -2, 0, -1});
  EXPECT_EQ(eval_as<int32_t>(b_.binary(Opcode::kDiv, a, b)),
            (std::vector<int32_t>{3, -3, -3, -1, std::numeric_limits<int32_t>::min()}));
}

TEST_F(ReferenceEvalTest, IntegerArithmeticIsExactAndWraps) {
  const int64_t big = (int64_t{1} << 60) + 1;  // not representable in f64
  auto* a = arg<int64_t>({2}, {big, std::numeric_limits<int64_t>::max()});
  auto* b = arg<int64_t>({2}, {2, 1});
  EXPECT_EQ(eval_as<int64_t>(b_.binary(Opcode::kAdd, a, b)),
            (std::vector<int64_t>{big + 2, std::numeric_limits<int64_t>::min()}));
  auto* u = arg<uint8_t>({2}, {250, 3});
  EXPECT_EQ(eval_as<uint8_t>(b_.binary(Opcode::kMul, u, u)), (std::vector<uint8_t>{36, 9}));
}

TEST_F(ReferenceEvalTest, PowSubMul) {
  auto* a = arg<float>({2}, {2.f, 9.f});
  auto* b = arg<float>({2}, {3.f, 0.5f});
  EXPECT_EQ(eval_as<float>(b_.binary(Opcode::kPow, a, b)), (std::vector<float>{8.f, 3.f}));
  EXPECT_EQ(eval_as<float>(b_.binary(Opcode::kSub, a, b)), (std::vector<float>{-1.f, 8.5f}));
  EXPECT_EQ(eval_as<float>(b_.binary(Opcode::kMul, a, b)), (std::vector<float>{6.f, 4.5f}));
}

TEST_F(ReferenceEvalTest, MaxAndMinPropagateNaN) {
  auto* a = arg<float>({3}, {1.f, kNaN, 3.f});
  auto* b = arg<float>({3}, {2.f, 0.f, kNaN});
  auto mx = eval_as<float>(b_.binary(Opcode::kMax, a, b));
  auto mn = eval_as<float>(b_.binary(Opcode::kMin, a, b));
  EXPECT_EQ(mx[0], 2.f);
  EXPECT_EQ(mn[0], 1.f);
  for (int i : {1, 2}) {
    EXPECT_TRUE(std::isnan(mx[static_cast<size_t>(i)]));
    EXPECT_TRUE(std::isnan(mn[static_cast<size_t>(i)]));
  }
  auto* p = arg<bool>({2}, {true, false});
  auto* q = arg<bool>({2}, {false, false});
  EXPECT_EQ(eval_as<bool>(b_.binary(Opcode::kMax, p, q)), (std::vector<bool>{true, false}));
}

TEST_F(ReferenceEvalTest, CompareGivesBoolAndNaNIsUnordered) {
  auto* a = arg<float>({3}, {1.f, 2.f, kNaN});
  auto* b = arg<float>({3}, {2.f, 2.f, kNaN});
  EXPECT_EQ(eval_as<bool>(b_.compare(Comparison::kLt, a, b)), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(eval_as<bool>(b_.compare(Comparison::kGe, a, b)), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(eval_as<bool>(b_.compare(Comparison::kEq, a, b)), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(eval_as<bool>(b_.compare(Comparison::kNe, a, b)), (std::vector<bool>{true, false, true}));
}

TEST_F(ReferenceEvalTest, SelectPicksPerElement) {
  auto* p = arg<bool>({3}, {true, false, true});
  auto* a = arg<int64_t>({3}, {1, 2, 3});
  auto* b = arg<int64_t>({3}, {10, 20, 30});
  EXPECT_EQ(eval_as<int64_t>(b_.select(p, a, b)), (std::vector<int64_t>{1, 20, 3}));
}

TEST_F(ReferenceEvalTest, ConvertTruncatesSaturatesAndTestsNonZeroForBool) {
  auto* x = arg<float>({6}, {2.7f, -2.7f, kNaN, 1e10f, -1e10f, -0.f});
  EXPECT_EQ(eval_as<int32_t>(b_.convert(x, DType::kI32)),
            (std::vector<int32_t>{2, -2, 0, std::numeric_limits<int32_t>::max(),
                                  std::numeric_limits<int32_t>::min(), 0}));
  EXPECT_EQ(eval_as<bool>(b_.convert(x, DType::kBool)),
            (std::vector<bool>{true, true, true, true, true, false}));
  auto* i = arg<int32_t>({3}, {300, -1, 5});
  EXPECT_EQ(eval_as<uint8_t>(b_.convert(i, DType::kU8)), (std::vector<uint8_t>{44, 255, 5}));
  EXPECT_EQ(eval(b_.convert(i, DType::kBF16)).to_vector<float>(), (std::vector<float>{300.f, -1.f, 5.f}));
  auto* big = arg<int64_t>({1}, {(int64_t{1} << 53) + 1});
  EXPECT_EQ(eval_as<double>(b_.convert(big, DType::kF64))[0], 9007199254740992.0);
}

TEST_F(ReferenceEvalTest, BroadcastInDimRepeatsAlongNewAndUnitDims) {
  auto* v = arg<float>({3}, {1, 2, 3});
  EXPECT_EQ(eval_as<float>(b_.broadcast_in_dim(v, {2, 3}, {1})), (std::vector<float>{1, 2, 3, 1, 2, 3}));
  auto* c = arg<float>({2}, {1, 2});
  EXPECT_EQ(eval_as<float>(b_.broadcast_in_dim(c, {2, 3}, {0})), (std::vector<float>{1, 1, 1, 2, 2, 2}));
  auto* u = arg<float>({1, 3}, {4, 5, 6});
  EXPECT_EQ(eval_as<float>(b_.broadcast_in_dim(u, {2, 3}, {0, 1})), (std::vector<float>{4, 5, 6, 4, 5, 6}));
  auto* s = arg<int32_t>({}, {7});
  EXPECT_EQ(eval_as<int32_t>(b_.broadcast_in_dim(s, {2, 2}, {})), (std::vector<int32_t>{7, 7, 7, 7}));
}

TEST_F(ReferenceEvalTest, ReshapeIsRowMajorAndTransposePermutes) {
  auto* x = arg<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor r = eval(b_.reshape(x, {3, 2}));
  EXPECT_EQ(r.shape(), Shape(DType::kF32, {3, 2}));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(eval_as<float>(b_.transpose(x, {1, 0})), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  std::vector<int32_t> values(24);
  for (int i = 0; i < 24; ++i) values[static_cast<size_t>(i)] = i;
  auto* t = arg<int32_t>({2, 3, 4}, values);
  auto got = eval_as<int32_t>(b_.transpose(t, {2, 0, 1}));  // result [4, 2, 3]
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(got[static_cast<size_t>(k * 6 + i * 3 + j)], i * 12 + j * 4 + k);
}

TEST_F(ReferenceEvalTest, SliceHonoursStrides) {
  auto* x = arg<int32_t>({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(eval_as<int32_t>(b_.slice(x, {1}, {8}, {3})), (std::vector<int32_t>{1, 4, 7}));
  auto* m = arg<int32_t>({3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  EXPECT_EQ(eval_as<int32_t>(b_.slice(m, {1, 0}, {3, 4}, {1, 2})), (std::vector<int32_t>{10, 12, 20, 22}));
}

TEST_F(ReferenceEvalTest, ConcatenateJoinsAlongTheAxis) {
  auto* a = arg<float>({2, 1}, {1, 2});
  auto* b = arg<float>({2, 2}, {3, 4, 5, 6});
  EXPECT_EQ(eval_as<float>(b_.concatenate({a, b}, 1)), (std::vector<float>{1, 3, 4, 2, 5, 6}));
  EXPECT_EQ(eval_as<float>(b_.concatenate({b, b}, 0)), (std::vector<float>{3, 4, 5, 6, 3, 4, 5, 6}));
}

TEST_F(ReferenceEvalTest, PadFillsEdgesAndNegativePaddingCrops) {
  auto* x = arg<float>({3}, {1, 2, 3});
  EXPECT_EQ(eval_as<float>(b_.pad(x, {2}, {-1}, 9.0)), (std::vector<float>{9, 9, 1, 2}));
  auto* m = arg<int32_t>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(eval_as<int32_t>(b_.pad(m, {1, -1}, {0, 1}, -5.0)),
            (std::vector<int32_t>{-5, -5, 2, -5, 4, -5}));
}

TEST_F(ReferenceEvalTest, IotaCountsAlongItsAxis) {
  EXPECT_EQ(eval_as<int32_t>(b_.iota(Shape(DType::kI32, {2, 3}), 1)), (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(eval(b_.iota(Shape(DType::kBF16, {2, 3}), 0)).to_vector<float>(),
            (std::vector<float>{0, 0, 0, 1, 1, 1}));
}

TEST_F(ReferenceEvalTest, GatherTakesRowsAndClampsIndices) {
  auto* table = arg<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  auto* rows = arg<int32_t>({4}, {2, -1, 7, 0});
  EXPECT_EQ(eval_as<float>(b_.gather(table, rows, 0)), (std::vector<float>{5, 6, 1, 2, 5, 6, 1, 2}));
  auto* cols = arg<int64_t>({2, 1}, {1, 0});
  HostTensor picked = eval(b_.gather(table, cols, 1));
  EXPECT_EQ(picked.shape(), Shape(DType::kF32, {3, 2, 1}));
  EXPECT_EQ(picked.to_vector<float>(), (std::vector<float>{2, 1, 4, 3, 6, 5}));
}

TEST_F(ReferenceEvalTest, ScatterAddAccumulatesDuplicatesAndClamps) {
  auto* base = arg<float>({3, 2}, {1, 1, 1, 1, 1, 1});
  auto* at = arg<int32_t>({4}, {0, 2, 0, 5});
  auto* updates = arg<float>({4, 2}, {1, 2, 10, 20, 100, 200, 1000, 2000});
  EXPECT_EQ(eval_as<float>(b_.scatter_add(base, at, updates, 0)),
            (std::vector<float>{102, 203, 1, 1, 1011, 2021}));
}

TEST_F(ReferenceEvalTest, ReduceOverEveryAxisCombination) {
  std::vector<float> values(24);
  for (size_t i = 0; i < 24; ++i) values[i] = static_cast<float>((i * 7) % 11) - 5.f;
  auto* x = arg<float>({2, 3, 4}, values);
  const int64_t dims[3] = {2, 3, 4};
  for (int mask = 0; mask < 8; ++mask) {
    Dims axes;
    for (int a = 0; a < 3; ++a)
      if (mask & (1 << a)) axes.push_back(a);
    // Expected by direct loops: the result index keeps the unreduced coordinates in order.
    Dims kept;
    for (int a = 0; a < 3; ++a)
      if (!(mask & (1 << a))) kept.push_back(dims[a]);
    int64_t n = 1;
    for (int64_t k : kept) n *= k;
    std::vector<float> sum(static_cast<size_t>(n), 0.f), mx(static_cast<size_t>(n), -kInf),
        mn(static_cast<size_t>(n), kInf);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) {
          const int coord[3] = {i, j, k};
          int64_t at = 0;
          for (int a = 0; a < 3; ++a)
            if (!(mask & (1 << a))) at = at * dims[a] + coord[a];
          const float v = values[static_cast<size_t>(i * 12 + j * 4 + k)];
          sum[static_cast<size_t>(at)] += v;
          mx[static_cast<size_t>(at)] = std::max(mx[static_cast<size_t>(at)], v);
          mn[static_cast<size_t>(at)] = std::min(mn[static_cast<size_t>(at)], v);
        }
    EXPECT_EQ(eval_as<float>(b_.reduce(Opcode::kReduceSum, x, axes)), sum) << "axes " << dims_to_string(axes);
    EXPECT_EQ(eval_as<float>(b_.reduce(Opcode::kReduceMax, x, axes)), mx) << "axes " << dims_to_string(axes);
    EXPECT_EQ(eval_as<float>(b_.reduce(Opcode::kReduceMin, x, axes)), mn) << "axes " << dims_to_string(axes);
  }
}

TEST_F(ReferenceEvalTest, ReductionsOfNothingGiveTheirIdentity) {
  auto* x = arg(HostTensor(Shape(DType::kF32, {0, 2})));
  EXPECT_EQ(eval_as<float>(b_.reduce(Opcode::kReduceSum, x, {0})), (std::vector<float>{0, 0}));
  EXPECT_EQ(eval_as<float>(b_.reduce(Opcode::kReduceMax, x, {0})), (std::vector<float>{-kInf, -kInf}));
  EXPECT_EQ(eval_as<float>(b_.reduce(Opcode::kReduceMin, x, {0})), (std::vector<float>{kInf, kInf}));
  auto* i = arg(HostTensor(Shape(DType::kI32, {0})));
  EXPECT_EQ(eval_as<int32_t>(b_.reduce(Opcode::kReduceMax, i, {0}))[0], std::numeric_limits<int32_t>::lowest());
}

TEST_F(ReferenceEvalTest, ReduceSumAccumulatesF32InF64AndBoolAsOr) {
  auto* x = arg<float>({3}, {1e8f, 1.f, -1e8f});
  EXPECT_EQ(eval_as<float>(b_.reduce(Opcode::kReduceSum, x, {0}))[0], 1.f);
  auto* p = arg<bool>({2, 2}, {true, false, false, false});
  EXPECT_EQ(eval_as<bool>(b_.reduce(Opcode::kReduceSum, p, {1})), (std::vector<bool>{true, false}));
}

TEST_F(ReferenceEvalTest, ArgmaxReturnsTheFirstMaximumAsI32) {
  auto* x = arg<float>({3, 3}, {1, 3, 3, 2, kNaN, kNaN, -kInf, -kInf, -kInf});
  HostTensor rows = eval(b_.argmax(x, 1));
  EXPECT_EQ(rows.dtype(), DType::kI32);
  EXPECT_EQ(rows.to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 0}));
  EXPECT_EQ(eval_as<int32_t>(b_.argmax(x, 0)), (std::vector<int32_t>{1, 1, 1}));
}

TEST_F(ReferenceEvalTest, DotGeneralMultipliesMatrices) {
  auto* a = arg<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto* w = arg<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  EXPECT_EQ(eval_as<float>(b_.dot_general(a, w, {.lhs_contracting = {1}, .rhs_contracting = {0}})),
            (std::vector<float>{58, 64, 139, 154}));
  // Contracting the first dims gives a^T-style results: lhs free dims, then rhs free dims.
  auto* c = arg<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  EXPECT_EQ(eval_as<float>(b_.dot_general(w, c, {.lhs_contracting = {0}, .rhs_contracting = {0}})),
            (std::vector<float>{251, 278, 278, 308}));
}

TEST_F(ReferenceEvalTest, DotGeneralPutsBatchDimsFirst) {
  // lhs [k=2, b=2, m=1], rhs [b=2, k=2, n=2] -> [b, m, n].
  auto* l = arg<int32_t>({2, 2, 1}, {1, 2, 3, 4});  // l[k][b]: b0 = (1, 3), b1 = (2, 4)
  auto* r = arg<int32_t>({2, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2});  // b0 = I, b1 = 2I
  HostTensor y = eval(b_.dot_general(
      l, r, {.lhs_batch = {1}, .rhs_batch = {0}, .lhs_contracting = {0}, .rhs_contracting = {1}}));
  EXPECT_EQ(y.shape(), Shape(DType::kI32, {2, 1, 2}));
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{1, 3, 4, 8}));
}

TEST_F(ReferenceEvalTest, DotGeneralAccumulatesF32InF64AndBf16InF32) {
  auto* a = arg<float>({3}, {1e8f, 1.f, -1e8f});
  auto* ones = arg<float>({3}, {1, 1, 1});
  EXPECT_EQ(eval_as<float>(b_.dot_general(a, ones, {.lhs_contracting = {0}, .rhs_contracting = {0}}))[0], 1.f);
  // Stepwise bf16 rounding would lose both 2^-8 terms; one rounding of the f32 sum keeps them.
  auto* h = arg(HostTensor::from_vector<float>({3}, {1.f, 0.00390625f, 0.00390625f}).astype(DType::kBF16));
  auto* hones = arg(HostTensor::from_vector<float>({3}, {1, 1, 1}).astype(DType::kBF16));
  HostTensor d = eval(b_.dot_general(h, hones, {.lhs_contracting = {0}, .rhs_contracting = {0}}));
  EXPECT_EQ(d.dtype(), DType::kBF16);
  EXPECT_EQ(d.to_vector<float>()[0], 1.0078125f);
}

TEST_F(ReferenceEvalTest, RngBitsArePhiloxOfTheElementIndex) {
  auto* key = arg<int64_t>({}, {0});
  HostTensor bits = eval(b_.rng_bits(key, {2, 3}));
  ASSERT_EQ(bits.shape(), Shape(DType::kI32, {2, 3}));
  auto v = bits.to_vector<int32_t>();
  EXPECT_EQ(static_cast<uint32_t>(v[0]), 0x6627e8d5u);  // Random123 known answer, counter 0
  for (size_t i = 0; i < v.size(); ++i)
    EXPECT_EQ(static_cast<uint32_t>(v[i]), philox_element_bits(0, static_cast<int64_t>(i)));
}

TEST_F(ReferenceEvalTest, RngBitsDependOnTheKey) {
  auto* k1 = arg<int64_t>({}, {42});
  auto* k2 = arg<int64_t>({}, {43});
  auto* both = b_.concatenate({b_.rng_bits(k1, {8}), b_.rng_bits(k2, {8})}, 0);
  auto v = eval_as<int32_t>(both);
  EXPECT_NE(std::vector<int32_t>(v.begin(), v.begin() + 8), std::vector<int32_t>(v.begin() + 8, v.end()));
  EXPECT_EQ(static_cast<uint32_t>(v[3]), philox_element_bits(42, 3));
}

TEST_F(ReferenceEvalTest, AllReduceIsTheIdentityOnOneReplica) {
  auto* x = arg<float>({2}, {1.5f, -2.f});
  EXPECT_EQ(eval_as<float>(b_.all_reduce(x, ReduceKind::kSum)), (std::vector<float>{1.5f, -2.f}));
  EXPECT_EQ(eval_as<float>(b_.all_reduce(x, ReduceKind::kMean)), (std::vector<float>{1.5f, -2.f}));
}

TEST_F(ReferenceEvalTest, FusionEvaluatesItsBodyOnItsOperands) {
  Computation* body = m_.add_computation("fused_add_max");
  Builder fb(body);
  auto* p0 = fb.parameter(Shape(DType::kF32, {3}), "p0");
  auto* p1 = fb.parameter(Shape(DType::kF32, {3}), "p1");
  auto* relu = fb.binary(Opcode::kMax, fb.binary(Opcode::kAdd, p0, p1), fb.full(p0->shape(), 0.0));
  body->set_outputs({relu});
  auto* x = arg<float>({3}, {1, -5, 2});
  auto* bias = arg<float>({3}, {1, 1, -3});
  Attrs attrs;
  attrs.body = body;
  Shape s(DType::kF32, {3});
  EXPECT_EQ(eval_as<float>(b_.add(Opcode::kFusion, {x, bias}, attrs, &s)), (std::vector<float>{2, 0, 0}));
}

TEST_F(ReferenceEvalTest, OutputsNeverShareStorageWithArguments) {
  auto* x = arg<float>({2}, {1, 2});
  m_.entry()->set_outputs({x, b_.reshape(x, {2, 1})});
  auto outs = evaluate(m_, args_);
  EXPECT_FALSE(outs[0].shares_storage_with(args_[0]));
  EXPECT_FALSE(outs[1].shares_storage_with(args_[0]));
  EXPECT_EQ(outs[0].to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST_F(ReferenceEvalTest, RejectsAnArgumentOfTheWrongShapeNamingIt) {
  b_.parameter(Shape(DType::kF32, {2, 3}), "kernel");
  m_.entry()->set_outputs({m_.entry()->parameter(0)});
  std::vector<HostTensor> wrong = {HostTensor(Shape(DType::kF32, {3, 2}))};
  KILN_EXPECT_ERROR(evaluate(m_, wrong), ShapeError, "argument 0 (\"kernel\") must be f32[2,3], received f32[3,2]");
}

}  // namespace
}  // namespace kiln::ir
