#include "kiln/core/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace kiln {
namespace {

// The published CRC-32C vectors (RFC 3720 appendix B.4, and the "123456789" check value),
// through the dispatching entry point and the portable table path alike.
TEST(Crc32cTest, MatchesThePublishedVectors) {
  unsigned char zeros[32] = {}, ones[32], ascending[32], descending[32];
  for (int i = 0; i < 32; ++i) {
    ones[i] = 0xff;
    ascending[i] = static_cast<unsigned char>(i);
    descending[i] = static_cast<unsigned char>(31 - i);
  }
  const std::string check = "123456789";
  for (auto* f : {&crc32c_extend, &crc32c_extend_table}) {
    EXPECT_EQ(f(0, check.data(), check.size()), 0xe3069283u);
    EXPECT_EQ(f(0, zeros, sizeof zeros), 0x8a9136aau);
    EXPECT_EQ(f(0, ones, sizeof ones), 0x62a8ab43u);
    EXPECT_EQ(f(0, ascending, sizeof ascending), 0x46dd794eu);
    EXPECT_EQ(f(0, descending, sizeof descending), 0x113fdb5cu);
    EXPECT_EQ(f(0, nullptr, 0), 0u);
  }
}

TEST(Crc32cTest, HardwareAndTablePathsAgreeOnEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  std::vector<unsigned char> bytes(300);
  for (auto& b : bytes) b = static_cast<unsigned char>(rng());
  for (size_t start = 0; start < 9; ++start)
    for (size_t n = 0; start + n <= bytes.size(); n += 7)
      EXPECT_EQ(crc32c_extend(5, bytes.data() + start, n), crc32c_extend_table(5, bytes.data() + start, n))
          << "start=" << start << " n=" << n << " hardware=" << crc32c_has_hardware();
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

// TFRecord's framing, by hand: length 9 little-endian, then the masked CRCs.
TEST(Crc32cTest, FramesARecordAsTFRecordDoes) {
  const TFRecordFrame f = tfrecord_frame("123456789");
  const unsigned char length[8] = {9, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(std::memcmp(f.header, length, 8), 0);
  const uint32_t length_crc = crc32c_mask(crc32c(length, 8));
  const uint32_t data_crc = crc32c_mask(0xe3069283u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(f.header[8 + i], static_cast<uint8_t>(length_crc >> (8 * i)));
    EXPECT_EQ(f.footer[i], static_cast<uint8_t>(data_crc >> (8 * i)));
  }
}

}  // namespace
}  // namespace kiln
