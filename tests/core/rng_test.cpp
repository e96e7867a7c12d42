// Philox-4x32-10 against the known-answer vectors published with Random123 (kat_vectors).
#include "kiln/core/rng.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

TEST(RngTest, Philox4x32MatchesRandom123KnownAnswers) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                          {0xffffffffu, 0xffffffffu}),
            (PhiloxCounter{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                          {0xa4093822u, 0x299f31d0u}),
            (PhiloxCounter{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(RngTest, ElementBitsSplitKeyAndIndexIntoLowAndHighWords) {
  const int64_t key = static_cast<int64_t>(0x299f31d0a4093822ull);
  const int64_t index = static_cast<int64_t>(0x85a308d3243f6a88ull);
  EXPECT_EQ(philox_element_bits(key, index),
            philox4x32_10({0x243f6a88u, 0x85a308d3u, 0, 0}, {0xa4093822u, 0x299f31d0u})[0]);
  static_assert(philox_element_bits(0, 0) == 0x6627e8d5u, "usable at compile time");
}

}  // namespace
}  // namespace kiln
