// decode_jpeg against PIL (which drives libjpeg through its own libjpeg-API decoder): the
// accurate IDCT agrees within IEEE 1180's peak error of 1, TF's default fast IDCT within the
// tolerance below; DCT scaling, luma-only and CMYK as TF; encode_jpeg read back by PIL; errors.
#include "kiln/data/image/jpeg_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kiln/data/element.h"
#include "kiln/data/readers/npy_reader.h"
#include "kiln/data/readers/read_file.h"
#include "tests/data/image/image_fixtures.h"
#include "tests/testing/expect_error.h"

namespace kiln::data {
namespace {

using testing::ImageFixtures;
using testing::max_abs_diff;
using testing::mean_abs_diff;

HostTensor decode_case(const ImageFixtures& fx, const testing::ImageCase& c) {
  return decode_jpeg(read_file(fx.file(c.file)),
                     {.channels = c.channels, .ratio = c.ratio, .dct_method = c.dct_method});
}

// libjpeg's accurate integer IDCT meets IEEE 1180 (peak error <= 1 per sample against the
// exact IDCT); PIL decodes with it too, so the two agree within 1 (in practice exactly: the
// same library behind two APIs).
TEST(JpegCodecTest, AccurateIdctMatchesPil) {
  KILN_IMAGE_FIXTURES(fx);
  int compared = 0;
  int64_t worst = 0;
  for (const auto& c : fx->cases("jpeg")) {
    if (c.dct_method != "INTEGER_ACCURATE") continue;
    SCOPED_TRACE(c.file + " -> " + c.expected);
    const HostTensor expected = read_npy(fx->file(c.expected));
    const HostTensor got = decode_case(*fx, c);
    ASSERT_EQ(got.shape(), expected.shape());
    const int64_t diff = max_abs_diff(got, expected);
    EXPECT_LE(diff, 1);
    worst = std::max(worst, diff);
    ++compared;
  }
  EXPECT_GE(compared, 20);
  std::printf("INTEGER_ACCURATE vs PIL: %d decodes, max |diff| %lld\n", compared, static_cast<long long>(worst));
}

// TF's default is libjpeg's fast integer IDCT (AA&N with 8-bit fixed-point multipliers),
// which libjpeg documents as less accurate than the IEEE 1180 one. Against PIL's accurate
// decode of these quality-50..90 photo-like files it measured here max |diff| 3-4 and mean
// |diff| 0.99-1.02, with a bias of about -0.8 (its descaling truncates); the bounds leave a
// little room above that and fail on any real decoding difference (a wrong upsampling or
// colour conversion moves the mean by several units).
TEST(JpegCodecTest, FastIdctIsTensorFlowsDefaultAndStaysCloseToPil) {
  KILN_IMAGE_FIXTURES(fx);
  int compared = 0;
  for (const auto& c : fx->cases("jpeg")) {
    if (c.dct_method != "INTEGER_FAST") continue;
    SCOPED_TRACE(c.file);
    const HostTensor expected = read_npy(fx->file(c.expected));
    const HostTensor fast = decode_case(*fx, c);
    const HostTensor by_default = decode_jpeg(read_file(fx->file(c.file)));
    EXPECT_EQ(max_abs_diff(by_default, fast), 0) << "the default must be INTEGER_FAST, as TF's";
    const int64_t worst = max_abs_diff(fast, expected);
    const double mean = mean_abs_diff(fast, expected);
    std::printf("%s: INTEGER_FAST vs PIL (accurate): max |diff| %lld, mean %.3f\n", c.file.c_str(),
                static_cast<long long>(worst), mean);
    EXPECT_LE(worst, 4);
    EXPECT_LE(mean, 1.25);
    ++compared;
  }
  EXPECT_GE(compared, 5);
}

TEST(JpegCodecTest, FancyUpscalingOffReplicatesChroma) {
  KILN_IMAGE_FIXTURES(fx);
  const HostTensor contents = read_file(fx->file("jpeg_420.jpg"));
  const HostTensor fancy = decode_jpeg(contents, {.dct_method = "INTEGER_ACCURATE"});
  const HostTensor plain = decode_jpeg(contents, {.fancy_upscaling = false, .dct_method = "INTEGER_ACCURATE"});
  ASSERT_EQ(fancy.shape(), plain.shape());
  EXPECT_GT(max_abs_diff(fancy, plain), 0);  // the option reaches libjpeg
  // 4:4:4 has no chroma to upsample: the option changes nothing there.
  const HostTensor full = read_file(fx->file("jpeg_444.jpg"));
  EXPECT_EQ(max_abs_diff(decode_jpeg(full, {.fancy_upscaling = false}), decode_jpeg(full)), 0);
}

TEST(JpegCodecTest, EncodesFilesPilReadsBack) {
  KILN_IMAGE_FIXTURES(fx);
  kiln::testing::TempDir dir;
  // A photo-like source (a fixture's pixels), encoded several ways.
  const HostTensor rgb = read_npy(fx->file("jpeg_444.npy"));
  const HostTensor gray = read_npy(fx->file("jpeg_gray.npy"));
  struct Variant {
    const char* name;
    const HostTensor& image;
    EncodeJpegOptions options;
  };
  const Variant variants[] = {
      {"enc_rgb_q95", rgb, {}},
      {"enc_rgb_q75_444", rgb, {.quality = 75, .chroma_downsampling = false}},
      {"enc_rgb_progressive", rgb, {.format = "rgb", .progressive = true}},
      {"enc_gray", gray, {.format = "grayscale", .quality = 90}},
  };
  for (const auto& v : variants) {
    const HostTensor jpeg = encode_jpeg(v.image, v.options);
    write_file(dir.file(std::string(v.name) + ".jpg"), jpeg);
    write_npy(dir.file(std::string(v.name) + ".npy"), v.image);
    const HostTensor back = decode_jpeg(jpeg, {.dct_method = "INTEGER_ACCURATE"});
    EXPECT_EQ(back.shape(), v.image.shape()) << v.name;
    EXPECT_LE(mean_abs_diff(back, v.image), 4.0) << v.name;
  }
  EXPECT_TRUE(testing::pil_reads_encoded_files(dir.path().string()));
}

TEST(JpegCodecTest, RejectsBadOptionsAndImages) {
  const HostTensor rgb = HostTensor::zeros(Shape(DType::kU8, {8, 8, 3}));
  const HostTensor jpeg = encode_jpeg(rgb);
  KILN_EXPECT_ERROR(decode_jpeg(jpeg, {.channels = 4}), ValueError, "channels=4");
  KILN_EXPECT_ERROR(decode_jpeg(jpeg, {.ratio = 3}), ValueError, "ratio=3");
  KILN_EXPECT_ERROR(decode_jpeg(jpeg, {.dct_method = "FLOAT"}), ValueError, "\"FLOAT\"");
  KILN_EXPECT_ERROR(encode_jpeg(rgb, {.format = "grayscale"}), ShapeError, "expects 1 channels");
  KILN_EXPECT_ERROR(encode_jpeg(rgb, {.format = "bgr"}), ValueError, "\"bgr\"");
  KILN_EXPECT_ERROR(encode_jpeg(rgb, {.quality = 101}), ValueError, "quality=101");
  KILN_EXPECT_ERROR(encode_jpeg(HostTensor::zeros(Shape(DType::kU8, {8, 8, 4}))), ShapeError, "1 (grey) or 3 (RGB)");
  KILN_EXPECT_ERROR(encode_jpeg(HostTensor::zeros(Shape(DType::kF32, {8, 8, 3}))), DTypeError, "u8 image");
}

TEST(JpegCodecTest, CmykDecodesToRgbOnly) {
  KILN_IMAGE_FIXTURES(fx);
  KILN_EXPECT_ERROR(decode_jpeg(read_file(fx->file("jpeg_cmyk.jpg")), {.channels = 1}), DataError, "CMYK");
}

// SOF0's height and width (after FF C0, the length and the precision byte).
HostTensor with_jpeg_size(const HostTensor& jpeg, uint16_t height, uint16_t width) {
  HostTensor t = jpeg.clone();
  auto* b = static_cast<uint8_t*>(t.raw_data());
  for (int64_t i = 2; i + 9 < t.num_elements(); ++i) {
    if (b[i] == 0xFF && b[i + 1] == 0xC0) {
      b[i + 5] = static_cast<uint8_t>(height >> 8), b[i + 6] = static_cast<uint8_t>(height);
      b[i + 7] = static_cast<uint8_t>(width >> 8), b[i + 8] = static_cast<uint8_t>(width);
      return t;
    }
  }
  ADD_FAILURE() << "no SOF0 marker";
  return t;
}

TEST(JpegCodecTest, RefusesHeadersThatLieAboutTheSize) {
  const HostTensor jpeg = encode_jpeg(HostTensor::zeros(Shape(DType::kU8, {16, 16, 3})));
  KILN_EXPECT_ERROR(decode_jpeg(with_jpeg_size(jpeg, 60000, 60000)), DataError, "kMaxImagePixels");
  KILN_EXPECT_ERROR(decode_jpeg(with_jpeg_size(jpeg, 4000, 4000)), DataError, "more than its");
  // A size the file could hold but whose data runs out: libjpeg's warning, an error here.
  KILN_EXPECT_ERROR(decode_jpeg(with_jpeg_size(jpeg, 64, 64)), DataError, "damaged or truncated");
}

TEST(JpegCodecTest, ErrorsNameTheFile) {
  kiln::testing::TempDir dir;
  const HostTensor jpeg = encode_jpeg(HostTensor::zeros(Shape(DType::kU8, {32, 32, 3})));
  HostTensor cut = HostTensor::uninitialized(Shape(DType::kU8, {jpeg.dims()[0] / 2}));
  std::memcpy(cut.raw_data(), jpeg.raw_data(), static_cast<size_t>(cut.byte_size()));
  write_file(dir.file("cut.jpg"), cut);
  KILN_EXPECT_ERROR(decode_jpeg(read_file(dir.file("cut.jpg"))), DataError, "[decode_jpeg] " + dir.file("cut.jpg") + ": ");
  KILN_EXPECT_ERROR(decode_jpeg(string_tensor("\xFF\xD8\xFF not a jpeg")), DataError, "damaged");
}

}  // namespace
}  // namespace kiln::data
