#include "kiln/core/error.h"

#include <gtest/gtest.h>

#include "kiln/core/check.h"
#include "tests/testing/expect_error.h"

namespace kiln {
namespace {

TEST(ErrorTest, EverySubclassIsAKilnErrorWithItsKind) {
  try {
    KILN_THROW(ShapeError, "[dense_1] expected ", 784, ", received ", "f32[32,28,28]");
  } catch (const Error& e) {
    EXPECT_STREQ(e.kind(), "ShapeError");
    EXPECT_STREQ(e.what(), "[dense_1] expected 784, received f32[32,28,28]");
  }
  EXPECT_STREQ(OutOfMemoryError("x").kind(), "OutOfMemoryError");
  EXPECT_STREQ(DataError("x").kind(), "DataError");
  EXPECT_STREQ(IOError("x").kind(), "IOError");
  EXPECT_STREQ(CompileError("x").kind(), "CompileError");
}

TEST(ErrorTest, CheckFailureIsAnInternalErrorWithLocation) {
  int x = 3;
  KILN_EXPECT_ERROR(KILN_CHECK(x == 4, "x=", x), InternalError, "error_test.cpp:");
  KILN_EXPECT_ERROR(KILN_CHECK(x == 4, "x=", x), InternalError, "x == 4: x=3");
  KILN_EXPECT_ERROR(KILN_CHECK(x == 4), InternalError, "bug in Kiln");
  EXPECT_NO_THROW(KILN_CHECK(x == 3));
}

}  // namespace
}  // namespace kiln
