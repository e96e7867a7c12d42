#include "kiln/core/dtype.h"

#include <gtest/gtest.h>

#include "kiln/core/error.h"
#include "tests/testing/expect_error.h"

namespace kiln {
namespace {

TEST(DTypeTest, SizesMatchTheElementTypes) {
  EXPECT_EQ(size_of(DType::kF32), 4u);
  EXPECT_EQ(size_of(DType::kF64), 8u);
  EXPECT_EQ(size_of(DType::kBF16), 2u);
  EXPECT_EQ(size_of(DType::kF16), 2u);
  EXPECT_EQ(size_of(DType::kI32), 4u);
  EXPECT_EQ(size_of(DType::kI64), 8u);
  EXPECT_EQ(size_of(DType::kU8), 1u);
  EXPECT_EQ(size_of(DType::kBool), 1u);
}

TEST(DTypeTest, NamesRoundTripThroughParse) {
  for (int i = 0; i < kNumDTypes; ++i) {
    auto t = static_cast<DType>(i);
    EXPECT_EQ(parse_dtype(name(t)), t) << name(t);
  }
  EXPECT_EQ(name(DType::kBF16), "bf16");
  EXPECT_EQ(parse_dtype("float32"), DType::kF32);
  EXPECT_EQ(parse_dtype("uint8"), DType::kU8);
}

TEST(DTypeTest, ParseRejectsUnknownNamesWithTheAcceptedList) {
  KILN_EXPECT_ERROR(parse_dtype("f8"), DTypeError, "unknown dtype 'f8'");
  KILN_EXPECT_ERROR(parse_dtype("f8"), DTypeError, "bf16");
}

TEST(DTypeTest, PromotionFollowsTheLattice) {
  EXPECT_EQ(promote(DType::kU8, DType::kF32), DType::kF32);
  EXPECT_EQ(promote(DType::kI32, DType::kI64), DType::kI64);
  EXPECT_EQ(promote(DType::kBF16, DType::kF16), DType::kF32);
  EXPECT_EQ(promote(DType::kBF16, DType::kI64), DType::kBF16);
  EXPECT_EQ(promote(DType::kF64, DType::kF32), DType::kF64);
  EXPECT_EQ(promote(DType::kBool, DType::kU8), DType::kU8);
}

// The spelling Kiln prints is also a spelling that compiles: DType::f32 is DType::kF32, and
// printing is unchanged.
TEST(DTypeTest, PrintedNamesAreAliasesOfTheEnumerators) {
  static_assert(DType::f32 == DType::kF32 && DType::f64 == DType::kF64 && DType::bf16 == DType::kBF16 &&
                DType::f16 == DType::kF16 && DType::i32 == DType::kI32 && DType::i64 == DType::kI64 &&
                DType::u8 == DType::kU8);
  EXPECT_EQ(name(DType::f32), "f32");
  EXPECT_EQ(name(DType::u8), "u8");
  EXPECT_EQ(size_of(DType::bf16), 2u);
  EXPECT_EQ(parse_dtype("i64"), DType::i64);
}

TEST(DTypeTest, FamilyPredicates) {
  EXPECT_TRUE(is_floating(DType::kBF16));
  EXPECT_FALSE(is_floating(DType::kI32));
  EXPECT_TRUE(is_integral(DType::kU8));
  EXPECT_FALSE(is_integral(DType::kBool));
}

}  // namespace
}  // namespace kiln
