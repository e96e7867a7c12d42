// The widened paths' bulk conversions give core/half.h's bits: every bf16 and f16 pattern
// widened, f32 patterns (ties, NaNs, infinities, subnormals, random) narrowed, with row strides
// and in sizes large enough for the OpenMP team; and the shared scratch's leases.
#include "kiln/runtime/cpu/widen.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "kiln/core/half.h"

namespace kiln::cpu {
namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(WidenTest, EveryBf16AndF16PatternWidensAsHalfH) {
  std::vector<uint16_t> all(1 << 16);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> out(all.size());
  widen(all.data(), DType::kBF16, static_cast<int64_t>(all.size()), out.data());
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(bits_of(out[i]), bits_of(bf16_bits_to_f32(all[i]))) << i;
  widen(all.data(), DType::kF16, static_cast<int64_t>(all.size()), out.data());
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(bits_of(out[i]), bits_of(f16_bits_to_f32(all[i]))) << i;
}

TEST(WidenTest, F32NarrowsAndRoundsAsHalfHRoundingToNearestEven) {
  std::vector<float> in;
  for (uint32_t u : {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffbfffffu,
                     0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x00000001u, 0x007fffffu, 0x7f7fffffu, 0x477fefffu,
                     0x477ff000u, 0x33000000u})
    in.push_back(from_bits(u));
  std::mt19937 rng(7);
  while (in.size() < 200000) in.push_back(from_bits(static_cast<uint32_t>(rng())));  // above the team's threshold
  std::vector<uint16_t> out(in.size());
  std::vector<float> rounded(in.size());
  for (DType t : {DType::kBF16, DType::kF16}) {
    narrow(in.data(), static_cast<int64_t>(in.size()), t, out.data());
    const int64_t n = static_cast<int64_t>(in.size());
    round_rows(in.data(), t, 1, n, n, rounded.data(), n);  // narrow and widen in one pass
    for (size_t i = 0; i < in.size(); ++i) {
      const uint16_t want = t == DType::kBF16 ? f32_to_bf16_bits(in[i]) : f32_to_f16_bits(in[i]);
      ASSERT_EQ(out[i], want) << name(t) << " of 0x" << std::hex << bits_of(in[i]);
      const float wide = t == DType::kBF16 ? bf16_bits_to_f32(want) : f16_bits_to_f32(want);
      ASSERT_EQ(bits_of(rounded[i]), bits_of(wide)) << name(t) << " of 0x" << std::hex << bits_of(in[i]);
    }
  }
}

TEST(WidenTest, RowsKeepTheirStridesAndLeaveTheGapsAlone) {
  constexpr int64_t kRows = 300, kCols = 517, kSrcLd = 530, kDstLd = 600;  // 155k values: on the team
  std::vector<uint16_t> src(kRows * kSrcLd);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint16_t>(0x3f80 + i % 97);
  std::vector<float> wide(kRows * kDstLd, -7.0f);
  widen_rows(src.data(), DType::kBF16, kRows, kCols, kSrcLd, wide.data(), kDstLd);
  std::vector<uint16_t> back(kRows * kSrcLd, 0xdead);
  narrow_rows(wide.data(), kRows, kCols, kDstLd, DType::kBF16, back.data(), kSrcLd);
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kDstLd; ++c) {
      if (c < kCols) {
        ASSERT_EQ(wide[r * kDstLd + c], bf16_bits_to_f32(src[r * kSrcLd + c]));
        ASSERT_EQ(back[r * kSrcLd + c], src[r * kSrcLd + c]);  // bf16 -> f32 -> bf16 is exact
      } else {
        ASSERT_EQ(wide[r * kDstLd + c], -7.0f) << "row " << r << " col " << c;
        if (c < kSrcLd) {
          ASSERT_EQ(back[r * kSrcLd + c], 0xdead);
        }
      }
    }
}

TEST(WidenTest, ScratchLeasesTheSharedBufferOrOneOfTheirOwn) {
  WidenScratch scratch;
  scratch.reserve(1000);
  scratch.reserve(10);  // never shrinks
  float* shared = nullptr;
  {
    WidenScratch::Lease a(scratch, 1000);
    shared = a.data();
    a.data()[999] = 1.0f;
    // Held: another thread's lease (the same executable run from two threads) gets its own.
    std::thread other([&] {
      WidenScratch::Lease b(scratch, 500);
      EXPECT_NE(b.data(), shared);
      b.data()[499] = 2.0f;
    });
    other.join();
  }
  WidenScratch::Lease again(scratch, 1000);
  EXPECT_EQ(again.data(), shared);
  WidenScratch::Lease larger(scratch, 5000);  // more than reserved: its own, never too small
  EXPECT_NE(larger.data(), shared);
  larger.data()[4999] = 3.0f;
}

}  // namespace
}  // namespace kiln::cpu
