// The corruption campaign: one-byte flips at every offset, truncation at every length, random
// multi-byte damage and lying size fields, on PNG and JPEG files of every kind the fixtures
// have. Every mutant must decode or throw DataError: no other exception, no crash (the ASan
// build runs this too), no hang (each decode is timed).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>

#include "kiln/data/image/decode_image.h"
#include "kiln/data/readers/read_file.h"
#include "tests/data/image/image_fixtures.h"

namespace kiln::data {
namespace {

using testing::ImageFixtures;

struct Tally {
  int64_t mutants = 0, decoded = 0, data_errors = 0, other = 0;
  double slowest_ms = 0;
  std::string first_other;
};

HostTensor bytes_tensor(const std::vector<uint8_t>& bytes) {
  HostTensor t = HostTensor::uninitialized(Shape(DType::kU8, {static_cast<int64_t>(bytes.size())}));
  if (!bytes.empty()) std::memcpy(t.raw_data(), bytes.data(), bytes.size());
  return t;
}

// Decodes one mutant through decode_image and the format's own decoder (channels 0 and a
// conversion), counting the outcome.
void try_mutant(const std::vector<uint8_t>& bytes, bool png, Tally& tally) {
  const HostTensor contents = bytes_tensor(bytes);
  const auto start = std::chrono::steady_clock::now();
  try {
    decode_image(contents);
    if (png) {
      decode_png(contents, {.channels = 3, .dtype = DType::kI32});
    } else {
      decode_jpeg(contents, {.channels = 1, .ratio = 2, .dct_method = "INTEGER_ACCURATE"});
    }
    ++tally.decoded;
  } catch (const DataError&) {
    ++tally.data_errors;
  } catch (const std::exception& e) {
    if (tally.other++ == 0) tally.first_other = e.what();
  }
  ++tally.mutants;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  tally.slowest_ms = std::max(tally.slowest_ms, ms);
}

void run_campaign(const std::vector<uint8_t>& file, bool png, Tally& tally) {
  // One byte flipped (all bits), at every offset.
  for (size_t at = 0; at < file.size(); ++at) {
    auto m = file;
    m[at] ^= 0xFF;
    try_mutant(m, png, tally);
  }
  // Cut at every length.
  for (size_t length = 0; length < file.size(); ++length)
    try_mutant(std::vector<uint8_t>(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(length)), png, tally);
  // Random damage: 1 to 8 random bytes set to random values (fixed seed).
  std::mt19937 rng(static_cast<uint32_t>(file.size()));
  for (int k = 0; k < 1000; ++k) {
    auto m = file;
    const int n = 1 + static_cast<int>(rng() % 8);
    for (int j = 0; j < n; ++j) m[rng() % m.size()] = static_cast<uint8_t>(rng());
    try_mutant(m, png, tally);
  }
  // Lying sizes: the size fields (PNG IHDR at bytes 16-23; JPEG SOF after FF C0/C2) set to
  // large or odd values.
  const uint32_t sizes[] = {0, 1, 255, 65535, 65536, 1u << 20, 0x7FFFFFFF, 0xFFFFFFFF};
  for (uint32_t w : sizes) {
    for (uint32_t h : sizes) {
      auto m = file;
      if (png) {
        for (int i = 0; i < 4; ++i) m[16 + i] = static_cast<uint8_t>(w >> (24 - 8 * i));
        for (int i = 0; i < 4; ++i) m[20 + i] = static_cast<uint8_t>(h >> (24 - 8 * i));
      } else {
        for (size_t i = 2; i + 9 < m.size(); ++i) {
          if (m[i] == 0xFF && (m[i + 1] == 0xC0 || m[i + 1] == 0xC2 || m[i + 1] == 0xC1)) {
            m[i + 5] = static_cast<uint8_t>(h >> 8), m[i + 6] = static_cast<uint8_t>(h);
            m[i + 7] = static_cast<uint8_t>(w >> 8), m[i + 8] = static_cast<uint8_t>(w);
            break;
          }
        }
      }
      try_mutant(m, png, tally);
    }
  }
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  const HostTensor t = read_file(path);
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  return {p, p + t.num_elements()};
}

TEST(ImageCorruptionTest, EveryMutantDecodesOrThrowsDataError) {
  KILN_IMAGE_FIXTURES(fx);
  const char* png_files[] = {"pil_gray1.png", "pil_pal4.png", "pil_pal8_trns.png", "pil_rgba8.png",
                             "pil_gray16.png", "w_gray2_adam7.png", "w_c6_16_adam7.png", "w_pal4_trns_adam7.png"};
  const char* jpeg_files[] = {"jpeg_420.jpg", "jpeg_422.jpg", "jpeg_420_progressive.jpg", "jpeg_gray.jpg",
                              "jpeg_cmyk.jpg"};
  Tally png, jpeg;
  for (const char* f : png_files) run_campaign(file_bytes(fx->file(f)), /*png=*/true, png);
  for (const char* f : jpeg_files) run_campaign(file_bytes(fx->file(f)), /*png=*/false, jpeg);
  for (const auto& [name, t] : {std::pair<const char*, const Tally&>{"PNG", png}, {"JPEG", jpeg}}) {
    std::printf("%s: %lld mutants: %lld decoded, %lld DataError, %lld other; slowest %.1f ms\n", name,
                static_cast<long long>(t.mutants), static_cast<long long>(t.decoded),
                static_cast<long long>(t.data_errors), static_cast<long long>(t.other), t.slowest_ms);
    EXPECT_EQ(t.other, 0) << name << ": first other exception: " << t.first_other;
    EXPECT_GT(t.data_errors, t.mutants / 2) << name;  // damage is mostly caught, not decoded as noise
    EXPECT_LT(t.slowest_ms, 2000.0) << name;
  }
}

}  // namespace
}  // namespace kiln::data
