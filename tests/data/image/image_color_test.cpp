// convert_image_dtype and the colour adjustments against values computed by hand from TF's
// definitions (integers to [0, 1] by x / max, back by x * (max + 0.5) truncated and saturated).
#include "kiln/data/image/image_color.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/testing/expect_error.h"

namespace kiln::data {
namespace {

void expect_near_all(const HostTensor& got, const std::vector<float>& want, float tol = 1e-5f) {
  const auto v = got.to_vector<float>();
  ASSERT_EQ(v.size(), want.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], want[i], tol) << "element " << i;
}

TEST(ImageColorTest, ConvertImageDtypeScalesAsTensorFlow) {
  const HostTensor u8 = HostTensor::from_vector<uint8_t>({1, 1, 3}, {0, 128, 255});
  const HostTensor f = convert_image_dtype(u8, DType::kF32);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{0.0f, 128.0f * static_cast<float>(1.0 / 255), 255.0f * static_cast<float>(1.0 / 255)}));
  // 0.5 * 255.5 = 127.75 -> 127; 1.0 -> 255.5 -> 255; out of range saturates.
  const HostTensor back = convert_image_dtype(HostTensor::from_vector<float>({1, 1, 4}, {0.5f, 1.0f, 1.5f, -0.2f}), DType::kU8);
  EXPECT_EQ(back.to_vector<int32_t>(), (std::vector<int32_t>{127, 255, 255, 0}));
  EXPECT_EQ(convert_image_dtype(f, DType::kU8).to_vector<int32_t>(), (std::vector<int32_t>{0, 128, 255}));
  // u8 -> i32 multiplies by (2^31) / (2^8) = 2^23; back divides (floor).
  const HostTensor wide = convert_image_dtype(u8, DType::kI32);
  EXPECT_EQ(wide.to_vector<int64_t>(), (std::vector<int64_t>{0, 128LL << 23, 255LL << 23}));
  EXPECT_EQ(convert_image_dtype(wide, DType::kU8).to_vector<int32_t>(), (std::vector<int32_t>{0, 128, 255}));
  EXPECT_EQ(convert_image_dtype(HostTensor::from_vector<int32_t>({1}, {2147483647}), DType::kU8).to_vector<int32_t>(),
            (std::vector<int32_t>{255}));
  KILN_EXPECT_ERROR(convert_image_dtype(u8, DType::kBool), DTypeError, "numeric image");
}

// u8 100 brightened by 0.1: (100 / 255 + 0.1) * 255.5 = 125.746 -> 125; 250 + 0.1 saturates.
TEST(ImageColorTest, BrightnessAndContrast) {
  const HostTensor u8 = HostTensor::from_vector<uint8_t>({1, 2, 1}, {100, 250});
  EXPECT_EQ(adjust_brightness(u8, 0.1f).to_vector<int32_t>(), (std::vector<int32_t>{125, 255}));
  EXPECT_EQ(adjust_brightness(u8, 0.1f).dtype(), DType::kU8);
  // Mean 15 per channel: (x - 15) * 2 + 15.
  expect_near_all(adjust_contrast(HostTensor::from_vector<float>({2, 2, 1}, {0, 10, 20, 30}), 2.0f), {-15, 5, 25, 45});
  // Per channel, per image of a batch: channel means 1.5 / 15 (image 0) and 0 / 0 (image 1).
  const HostTensor batch = HostTensor::from_vector<float>({2, 1, 2, 2}, {1, 10, 2, 20, 0, 0, 0, 0});
  expect_near_all(adjust_contrast(batch, 3.0f), {0, 0, 3, 30, 0, 0, 0, 0});
}

// [1, 2, 3, 4]: mean 2.5, stddev sqrt(1.25); a constant image divides by 1 / sqrt(4) instead
// of 0, giving zeros.
TEST(ImageColorTest, PerImageStandardization) {
  const float s = std::sqrt(1.25f);
  expect_near_all(per_image_standardization(HostTensor::from_vector<uint8_t>({2, 2, 1}, {1, 2, 3, 4})),
                  {-1.5f / s, -0.5f / s, 0.5f / s, 1.5f / s});
  expect_near_all(per_image_standardization(HostTensor::from_vector<float>({1, 2, 2}, {7, 7, 7, 7})), {0, 0, 0, 0});
}

// 0.2989 R + 0.5870 G + 0.1140 B. u8 (100, 150, 200): 0.551922 of 255, * 255.5 -> 141.
TEST(ImageColorTest, GrayscaleConversions) {
  expect_near_all(rgb_to_grayscale(HostTensor::from_vector<float>({1, 2, 3}, {1, 0, 0, 0.5f, 0.5f, 0.5f})),
                  {0.2989f, 0.49995f});  // 0.5 * (0.2989 + 0.5870 + 0.1140)
  EXPECT_EQ(rgb_to_grayscale(HostTensor::from_vector<uint8_t>({1, 1, 3}, {100, 150, 200})).to_vector<int32_t>(),
            (std::vector<int32_t>{141}));
  const HostTensor gray = HostTensor::from_vector<uint8_t>({1, 2, 1}, {3, 9});
  EXPECT_EQ(grayscale_to_rgb(gray).to_vector<int32_t>(), (std::vector<int32_t>{3, 3, 3, 9, 9, 9}));
  KILN_EXPECT_ERROR(rgb_to_grayscale(gray), ShapeError, "last dimension 3");
  KILN_EXPECT_ERROR(grayscale_to_rgb(HostTensor::zeros(Shape(DType::kU8, {1, 1, 3}))), ShapeError, "last dimension 1");
}

// Red (1, 0, 0) is hue 0, saturation 1, value 1: half saturation is (1, 0.5, 0.5); a third of a
// turn makes it green, minus a third blue. Grey has no hue or saturation to change.
TEST(ImageColorTest, SaturationAndHueInHsv) {
  const HostTensor red = HostTensor::from_vector<float>({1, 2, 3}, {1, 0, 0, 0.4f, 0.4f, 0.4f});
  expect_near_all(adjust_saturation(red, 0.5f), {1, 0.5f, 0.5f, 0.4f, 0.4f, 0.4f});
  expect_near_all(adjust_saturation(red, 0.0f), {1, 1, 1, 0.4f, 0.4f, 0.4f});
  expect_near_all(adjust_hue(red, 1.0f / 3), {0, 1, 0, 0.4f, 0.4f, 0.4f});
  expect_near_all(adjust_hue(red, -1.0f / 3), {0, 0, 1, 0.4f, 0.4f, 0.4f});
  KILN_EXPECT_ERROR(adjust_hue(red, 2.0f), ValueError, "delta=2");
}

// The random forms draw their factor from the seed: the same seed, the same result; the factor
// stays in its range (checked through the adjusted value of a known pixel).
TEST(ImageColorTest, RandomAdjustmentsAreStatelessAndInRange) {
  const HostTensor img = HostTensor::from_vector<float>({1, 2, 1}, {0.25f, 0.75f});
  for (int64_t s = 0; s < 20; ++s) {
    const StatelessSeed seed{s, 3};
    const auto b = random_brightness(img, 0.2f, seed).to_vector<float>();
    EXPECT_EQ(b, random_brightness(img, 0.2f, seed).to_vector<float>());
    EXPECT_NEAR(b[1] - b[0], 0.5f, 1e-6f);
    EXPECT_TRUE(b[0] - 0.25f >= -0.2f && b[0] - 0.25f < 0.2f) << b[0];
    const auto c = random_contrast(img, 0.5f, 1.5f, seed).to_vector<float>();
    const float factor = (c[1] - c[0]) / 0.5f;
    EXPECT_TRUE(factor >= 0.5f - 1e-6f && factor < 1.5f + 1e-6f) << factor;
  }
  KILN_EXPECT_ERROR(random_contrast(img, 1.0f, 0.5f, {0, 0}), ValueError, "lower < upper");
  KILN_EXPECT_ERROR(random_hue(HostTensor::zeros(Shape(DType::kF32, {1, 1, 3})), 0.7f, {0, 0}), ValueError, "[0, 0.5]");
}

}  // namespace
}  // namespace kiln::data
