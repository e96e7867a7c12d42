// decode_image: format detection, TF's dtype scalings, unsupported formats, and the codecs in
// a pipeline (list_files -> read_file -> decode, in parallel), with errors naming the file.
#include "kiln/data/image/decode_image.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kiln/data/dataset.h"
#include "kiln/data/readers/npy_reader.h"
#include "kiln/data/readers/read_file.h"
#include "kiln/data/readers/tfrecord_reader.h"
#include "tests/data/image/image_fixtures.h"
#include "tests/testing/expect_error.h"

namespace kiln::data {
namespace {

using testing::ImageFixtures;
using testing::max_abs_diff;

TEST(DecodeImageTest, DetectsTheFormatAndUsesTensorFlowsDefaults) {
  KILN_IMAGE_FIXTURES(fx);
  const HostTensor png = read_file(fx->file("pil_rgba8.png"));
  EXPECT_EQ(max_abs_diff(decode_image(png), decode_png(png)), 0);
  EXPECT_EQ(max_abs_diff(decode_image(png, {.channels = 3}), decode_png(png, {.channels = 3})), 0);
  const HostTensor jpeg = read_file(fx->file("jpeg_420.jpg"));
  EXPECT_EQ(max_abs_diff(decode_image(jpeg), decode_jpeg(jpeg)), 0);  // TF: INTEGER_FAST, fancy upscaling
  EXPECT_EQ(decode_image(read_file(fx->file("jpeg_gray.jpg"))).dims(), (Dims{29, 31, 1}));
}

TEST(DecodeImageTest, ScalesToTensorFlowsDtypes) {
  KILN_IMAGE_FIXTURES(fx);
  // PNG: 16-bit samples as they are; float = x / 65535 (8-bit files widened x * 257 first).
  const HostTensor png16 = read_file(fx->file("pil_gray16.png"));
  const auto samples = read_npy(fx->file("pil_gray16.npy")).to_vector<int32_t>();
  EXPECT_EQ(decode_image(png16, {.dtype = DType::kI32}).to_vector<int32_t>(), samples);
  const auto f = decode_image(png16, {.dtype = DType::kF32}).to_vector<float>();
  for (size_t i = 0; i < samples.size(); ++i)
    ASSERT_EQ(f[i], static_cast<float>(samples[i]) * static_cast<float>(1.0 / 65535)) << i;
  const HostTensor png8 = read_file(fx->file("pil_gray8.png"));
  const auto bytes8 = read_npy(fx->file("pil_gray8.npy")).to_vector<int32_t>();
  const auto f8 = decode_image(png8, {.dtype = DType::kF32}).to_vector<float>();
  const auto w8 = decode_image(png8, {.dtype = DType::kI32}).to_vector<int32_t>();
  for (size_t i = 0; i < bytes8.size(); ++i) {
    ASSERT_EQ(w8[i], bytes8[i] * 257);
    ASSERT_EQ(f8[i], static_cast<float>(bytes8[i] * 257) * static_cast<float>(1.0 / 65535));
  }
  // JPEG: 8-bit samples; uint16 = x * 256 (TF: floor(65536 / 256)), float = x / 255.
  const HostTensor jpeg = read_file(fx->file("jpeg_444.jpg"));
  const auto u8 = decode_image(jpeg).to_vector<int32_t>();
  const auto wide = decode_image(jpeg, {.dtype = DType::kI32}).to_vector<int32_t>();
  const auto unit = decode_image(jpeg, {.dtype = DType::kF32}).to_vector<float>();
  for (size_t i = 0; i < u8.size(); ++i) {
    ASSERT_EQ(wide[i], u8[i] * 256);
    ASSERT_EQ(unit[i], static_cast<float>(u8[i]) * static_cast<float>(1.0 / 255));
  }
  EXPECT_EQ(unit.front() >= 0.0f && unit.back() <= 1.0f, true);
}

TEST(DecodeImageTest, NamesUnsupportedAndUnknownFormats) {
  KILN_EXPECT_ERROR(decode_image(string_tensor("GIF89a......")), DataError, "a GIF file; Kiln decodes JPEG and PNG only");
  KILN_EXPECT_ERROR(decode_image(string_tensor("BM......")), DataError, "a BMP file");
  KILN_EXPECT_ERROR(decode_image(string_tensor("hello")), DataError, "unknown image format (first bytes 68 65 6C 6C)");
  KILN_EXPECT_ERROR(decode_image(string_tensor("x"), {.channels = 2}), ValueError, "channels=2");
  KILN_EXPECT_ERROR(decode_image(string_tensor("x"), {.dtype = DType::kI64}), DTypeError, "dtype=i64");
  const HostTensor jpeg = encode_jpeg(HostTensor::zeros(Shape(DType::kU8, {8, 8, 3})));
  KILN_EXPECT_ERROR(decode_image(jpeg, {.channels = 4}), ValueError, "no alpha channel");
}

// The tf.data idiom: list_files -> read_file -> decode_image -> resize-free batch (same sizes),
// on worker threads. A damaged file fails the pipeline with its path in the message.
TEST(DecodeImageTest, DecodesFilesInAParallelPipelineAndNamesADamagedOne) {
  kiln::testing::TempDir dir;
  for (int i = 0; i < 6; ++i) {
    HostTensor image = HostTensor::zeros(Shape(DType::kU8, {5, 7, 3}));
    image.data<uint8_t>()[0] = static_cast<uint8_t>(40 * i);
    write_file(dir.file("img" + std::to_string(i) + ".png"), encode_png(image));
  }
  const auto decode = [](HostTensor path) { return decode_image(read_file(path), {.channels = 3}); };
  Dataset ds = Dataset::list_files(dir.file("*.png"), /*shuffle=*/false)
                   .map(decode, {.num_parallel_calls = kAutotune, .name = "decode"})
                   .batch(3);
  Iterator it = ds.iterator();
  std::vector<int> first_pixels;
  while (auto batch = it.next()) {
    ASSERT_EQ((*batch)[0].dims(), (Dims{3, 5, 7, 3}));
    for (int b = 0; b < 3; ++b) first_pixels.push_back((*batch)[0].data<uint8_t>()[b * 5 * 7 * 3]);
  }
  EXPECT_EQ(first_pixels, (std::vector<int>{0, 40, 80, 120, 160, 200}));

  write_file(dir.file("img3.png"), string_tensor("\x89PNG\r\n\x1A\n damaged"));
  Iterator bad = ds.iterator();
  KILN_EXPECT_ERROR(while (bad.next()) {}, DataError, dir.file("img3.png"));
}

TEST(DecodeImageTest, ARecordFromATfRecordFileIsNamedByFileAndIndex) {
  kiln::testing::TempDir dir;
  const HostTensor png = encode_png(HostTensor::zeros(Shape(DType::kU8, {2, 2, 1})));
  {
    TFRecordWriter writer(dir.file("images.tfrecord"));
    writer.write(std::string_view(static_cast<const char*>(png.raw_data()), static_cast<size_t>(png.byte_size())));
    writer.write("\x89PNG\r\n\x1A\n not really");
    writer.close();
  }
  TFRecordReader reader(dir.file("images.tfrecord"));
  EXPECT_EQ(decode_image(*reader.next()).dims(), (Dims{2, 2, 1}));
  KILN_EXPECT_ERROR(decode_image(*reader.next()), DataError, dir.file("images.tfrecord") + ", record 1");
}

}  // namespace
}  // namespace kiln::data
