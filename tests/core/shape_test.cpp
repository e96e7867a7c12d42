#include "kiln/core/shape.h"

#include <gtest/gtest.h>

#include "kiln/core/error.h"
#include "tests/testing/expect_error.h"

namespace kiln {
namespace {

TEST(ShapeTest, PrintsInIrForm) {
  EXPECT_EQ(Shape(DType::kF32, {128, 784}).to_string(), "f32[128,784]");
  EXPECT_EQ(Shape(DType::kBF16, {}).to_string(), "bf16[]");
}

TEST(ShapeTest, CountsElementsAndBytes) {
  Shape s(DType::kF32, {2, 3, 4});
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.num_elements(), 24);
  EXPECT_EQ(s.byte_size(), 96);
  EXPECT_EQ(Shape(DType::kI64, {}).num_elements(), 1);
  EXPECT_EQ(Shape(DType::kU8, {5, 0}).num_elements(), 0);
}

TEST(ShapeTest, NegativeAxesCountFromTheEnd) {
  Shape s(DType::kF32, {2, 3, 4});
  EXPECT_EQ(s.dim(-1), 4);
  EXPECT_EQ(s.dim(0), 2);
  EXPECT_EQ(s.normalize_axis(-3), 0);
  KILN_EXPECT_ERROR(s.dim(3), ShapeError, "axis 3 is out of range for f32[2,3,4]");
  KILN_EXPECT_ERROR(s.dim(-4), ShapeError, "expected an axis in [-3, 2]");
}

TEST(ShapeTest, RejectsNegativeDimensions) {
  KILN_EXPECT_ERROR(Shape(DType::kF32, {-1, 784}), ShapeError, "dimensions must be >= 0");
}

TEST(ShapeTest, RejectsElementCountOverflow) {
  int64_t big = int64_t{1} << 40;
  KILN_EXPECT_ERROR(Shape(DType::kF32, {big, big}), ShapeError, "overflows int64");
  // The element count fits but the byte size does not.
  Shape s(DType::kF64, {int64_t{1} << 61});
  KILN_EXPECT_ERROR(s.byte_size(), ShapeError, "byte size overflows");
}

TEST(ShapeTest, EqualityComparesDtypeAndDims) {
  EXPECT_EQ(Shape(DType::kF32, {2}), Shape(DType::kF32, {2}));
  EXPECT_FALSE(Shape(DType::kF32, {2}) == Shape(DType::kF16, {2}));
  EXPECT_EQ(Shape(DType::kF32, {2}).with_dtype(DType::kU8), Shape(DType::kU8, {2}));
}

}  // namespace
}  // namespace kiln
