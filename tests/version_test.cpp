// kiln/version.h, generated from project(kiln VERSION ...): the macros and kiln::version()
// agree with the version CMake passes in as KILN_PROJECT_VERSION.
#include <gtest/gtest.h>

#include <string>

#include "kiln/version.h"

namespace kiln {
namespace {

TEST(VersionTest, MatchesTheProjectVersion) {
  EXPECT_STREQ(version(), KILN_PROJECT_VERSION);
  EXPECT_STREQ(KILN_VERSION_STRING, KILN_PROJECT_VERSION);
  const std::string parts = std::to_string(KILN_VERSION_MAJOR) + "." + std::to_string(KILN_VERSION_MINOR) + "." +
                            std::to_string(KILN_VERSION_PATCH);
  EXPECT_EQ(parts, KILN_PROJECT_VERSION);
}

}  // namespace
}  // namespace kiln
