// decode_png against PIL (every colour type and bit depth, interlaced or not, bit for bit),
// against TensorFlow's libpng recipe for every channels/dtype request, encode_png read back by
// PIL, and the errors of bad options and bad files.
#include "kiln/data/image/png_codec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "kiln/data/image/image_limits.h"
#include "kiln/data/element.h"
#include "kiln/data/readers/npy_reader.h"
#include "kiln/data/readers/read_file.h"
#include "tests/data/image/image_fixtures.h"
#include "tests/data/image/tf_png_reference.h"
#include "tests/testing/expect_error.h"

namespace kiln::data {
namespace {

using testing::ImageFixtures;
using testing::max_abs_diff;

TEST(PngCodecTest, DecodesEveryColourTypeAndDepthAsPilDoes) {
  KILN_IMAGE_FIXTURES(fx);
  const auto cases = fx->cases("png");
  ASSERT_GE(cases.size(), 30u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file + " channels=" + std::to_string(c.channels));
    const HostTensor expected = read_npy(fx->file(c.expected));
    const DType dtype = expected.dtype() == DType::kU8 ? DType::kU8 : DType::kI32;
    const HostTensor got = decode_png(read_file(fx->file(c.file)), {.channels = c.channels, .dtype = dtype});
    EXPECT_EQ(got.shape(), expected.shape());
    EXPECT_EQ(max_abs_diff(got, expected), 0);
  }
}

// Kiln converts channels and depth in its own loop; TF has libpng do it. Every file, every
// channels request, both depths: the same samples. One deliberate difference: for an alpha
// channel added to a sub-8-bit file, libpng's filler (TF asks for (1 << bit_depth) - 1)
// gives 1, 3 or 15 instead of opaque; Kiln gives opaque 255 / 65535.
TEST(PngCodecTest, ConvertsChannelsAndDepthAsTensorFlowsLibpngRecipe) {
  KILN_IMAGE_FIXTURES(fx);
  int compared = 0;
  for (const auto& c : fx->cases("png")) {
    if (c.channels != 0) continue;
    const HostTensor contents = read_file(fx->file(c.file));
    const auto* bytes = static_cast<const uint8_t*>(contents.raw_data());
    const int bit_depth = bytes[24], color_type = bytes[25];
    const bool has_trns =
        std::string_view(reinterpret_cast<const char*>(bytes), static_cast<size_t>(contents.byte_size())).find("tRNS") !=
        std::string_view::npos;
    for (int channels = 0; channels <= 4; ++channels) {
      for (int bits : {8, 16}) {
        SCOPED_TRACE(c.file + " channels=" + std::to_string(channels) + " bits=" + std::to_string(bits));
        const auto want = testing::tf_reference_decode_png(bytes, static_cast<size_t>(contents.byte_size()), channels, bits);
        ASSERT_TRUE(want.ok) << want.error;
        const HostTensor got = decode_png(contents, {.channels = channels, .dtype = bits == 8 ? DType::kU8 : DType::kI32});
        ASSERT_EQ(got.shape().dims(), (Dims{want.height, want.width, want.channels}));
        std::vector<int32_t> expected = want.samples;
        const bool filler_quirk = want.channels % 2 == 0 && bit_depth < 8 && !has_trns && (color_type & 4) == 0;
        if (filler_quirk) {
          const int32_t tf_alpha = (1 << bit_depth) - 1, opaque = bits == 16 ? 65535 : 255;
          for (size_t i = static_cast<size_t>(want.channels) - 1; i < expected.size(); i += static_cast<size_t>(want.channels)) {
            // TF's filler, then widened by x * 257 when 16 bits were asked for.
            ASSERT_EQ(expected[i], bits == 16 ? tf_alpha * 257 : tf_alpha);
            expected[i] = opaque;
          }
        }
        EXPECT_EQ(got.to_vector<int32_t>(), expected);
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, 300);
}

TEST(PngCodecTest, EncodesFilesPilReadsBackExactly) {
  KILN_IMAGE_FIXTURES(fx);
  kiln::testing::TempDir dir;
  int written = 0;
  for (const auto& c : fx->cases("png")) {
    if (c.channels != 0) continue;
    // Re-encode what the fixture decodes to (every channel count, both depths).
    const HostTensor pixels = read_npy(fx->file(c.expected));
    const std::string stem = "enc_" + c.file.substr(0, c.file.size() - 4);
    write_file(dir.file(stem + ".png"), encode_png(pixels, {.compression = written % 10}));
    write_npy(dir.file(stem + ".npy"), pixels);
    // And Kiln's decoder reads its own files back.
    EXPECT_EQ(max_abs_diff(decode_png(read_file(dir.file(stem + ".png")), {.dtype = pixels.dtype()}), pixels), 0)
        << stem;
    ++written;
  }
  ASSERT_GE(written, 25);
  EXPECT_TRUE(testing::pil_reads_encoded_files(dir.path().string()));
}

TEST(PngCodecTest, RejectsBadOptionsAndImages) {
  const HostTensor rgb = HostTensor::zeros(Shape(DType::kU8, {2, 2, 3}));
  const HostTensor png = encode_png(rgb);
  KILN_EXPECT_ERROR(decode_png(png, {.channels = 5}), ValueError, "channels=5");
  KILN_EXPECT_ERROR(decode_png(png, {.dtype = DType::kF32}), DTypeError, "dtype=f32");
  KILN_EXPECT_ERROR(decode_png(HostTensor::zeros(Shape(DType::kF32, {4}))), DTypeError, "u8[n] string tensor");
  KILN_EXPECT_ERROR(encode_png(HostTensor::zeros(Shape(DType::kU8, {2, 2, 5}))), ShapeError, "1 to 4 channels");
  KILN_EXPECT_ERROR(encode_png(HostTensor::zeros(Shape(DType::kU8, {2, 2}))), ShapeError, "[height, width, channels]");
  KILN_EXPECT_ERROR(encode_png(HostTensor::zeros(Shape(DType::kF32, {2, 2, 1}))), DTypeError, "u8 (8-bit) or i32");
  KILN_EXPECT_ERROR(encode_png(HostTensor::from_vector<int32_t>({1, 1, 1}, {70000})), ValueError, "[0, 65535]");
  KILN_EXPECT_ERROR(encode_png(rgb, {.compression = 10}), ValueError, "compression=10");
}

// The header is read before anything is allocated: a lying size fails fast, naming the cap or
// the bound the file's size puts on it.
TEST(PngCodecTest, RefusesHeadersThatLieAboutTheSize) {
  HostTensor png = encode_png(HostTensor::zeros(Shape(DType::kU8, {4, 4, 1})));
  auto set_size = [&](uint32_t width, uint32_t height) {
    HostTensor t = png.clone();
    auto* b = static_cast<uint8_t*>(t.raw_data());
    for (int i = 0; i < 4; ++i) b[16 + i] = static_cast<uint8_t>(width >> (24 - 8 * i));
    for (int i = 0; i < 4; ++i) b[20 + i] = static_cast<uint8_t>(height >> (24 - 8 * i));
    // Fix the IHDR CRC, so only the size is wrong.
    uint32_t crc = 0xFFFFFFFFu;
    for (int i = 12; i < 29; ++i) {
      crc ^= b[i];
      for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
    }
    crc ^= 0xFFFFFFFFu;
    for (int i = 0; i < 4; ++i) b[29 + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
    return t;
  };
  KILN_EXPECT_ERROR(decode_png(set_size(100000, 100000)), DataError, "over the limit of 536870912 (kMaxImagePixels");
  KILN_EXPECT_ERROR(decode_png(set_size(20000, 20000)), DataError, "more than its");
  KILN_EXPECT_ERROR(decode_png(set_size(4, 5)), DataError, "truncated");
}

TEST(PngCodecTest, ErrorsNameTheFile) {
  kiln::testing::TempDir dir;
  HostTensor png = encode_png(HostTensor::zeros(Shape(DType::kU8, {8, 8, 3})));
  HostTensor cut = HostTensor::uninitialized(Shape(DType::kU8, {png.dims()[0] - 20}));
  std::memcpy(cut.raw_data(), png.raw_data(), static_cast<size_t>(cut.byte_size()));
  write_file(dir.file("cut.png"), cut);
  KILN_EXPECT_ERROR(decode_png(read_file(dir.file("cut.png"))), DataError, "[decode_png] " + dir.file("cut.png") + ": ");
  KILN_EXPECT_ERROR(decode_png(cut), DataError, "u8[");
  KILN_EXPECT_ERROR(decode_png(string_tensor("not a PNG file, only some text")), DataError, "damaged");
  KILN_EXPECT_ERROR(decode_png(string_tensor("\x89PNG")), DataError, "truncated");
  KILN_EXPECT_ERROR(decode_png(HostTensor::zeros(Shape(DType::kU8, {0}))), DataError, "empty");
}

}  // namespace
}  // namespace kiln::data
