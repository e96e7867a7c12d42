#include "kiln/core/crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace kiln {
namespace {

TEST(Crc32cTest, MatchesTheStandardCheckValues) {
  const std::string check = "123456789";
  EXPECT_EQ(crc32c(check.data(), check.size()), 0xe3069283u);  // RFC 3720 check value
  unsigned char zeros[32] = {};
  EXPECT_EQ(crc32c(zeros, sizeof zeros), 0x8a9136aau);  // RFC 3720 B.4
  EXPECT_EQ(crc32c(nullptr, 0), 0u);
}

TEST(Crc32cTest, ExtendingInPiecesEqualsOneShot) {
  const std::string s = "The quick brown fox jumps over the lazy dog, twice over.";
  uint32_t whole = crc32c(s.data(), s.size());
  for (size_t cut = 0; cut <= s.size(); ++cut)
    EXPECT_EQ(crc32c_extend(crc32c(s.data(), cut), s.data() + cut, s.size() - cut), whole);
}

TEST(Crc32cTest, MaskRoundTrips) {
  for (uint32_t v : {0u, 1u, 0xe3069283u, 0xffffffffu}) EXPECT_EQ(crc32c_unmask(crc32c_mask(v)), v);
}

}  // namespace
}  // namespace kiln
