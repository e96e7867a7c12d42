// Crops, pads, flips and their stateless random forms, on hand-made images (values = their
// own coordinates, so every output element says where it came from).
#include "kiln/data/image/image_geometry.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/testing/expect_error.h"

namespace kiln::data {
namespace {

// [h, w, 1] with value 10 * y + x.
HostTensor coords(int64_t h, int64_t w) {
  std::vector<int32_t> v;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) v.push_back(static_cast<int32_t>(10 * y + x));
  return HostTensor::from_vector<int32_t>({h, w, 1}, v);
}

std::vector<int32_t> values(const HostTensor& t) { return t.to_vector<int32_t>(); }

TEST(ImageGeometryTest, CropsAndPadsBoundingBoxes) {
  EXPECT_EQ(values(crop_to_bounding_box(coords(3, 4), 1, 2, 2, 2)), (std::vector<int32_t>{12, 13, 22, 23}));
  const HostTensor padded = pad_to_bounding_box(HostTensor::from_vector<int32_t>({1, 2, 1}, {7, 8}), 1, 1, 3, 4);
  EXPECT_EQ(padded.dims(), (Dims{3, 4, 1}));
  EXPECT_EQ(values(padded), (std::vector<int32_t>{0, 0, 0, 0, 0, 7, 8, 0, 0, 0, 0, 0}));
  KILN_EXPECT_ERROR(crop_to_bounding_box(coords(3, 4), 2, 0, 2, 4), ValueError, "must lie inside the 3x4 image");
  KILN_EXPECT_ERROR(pad_to_bounding_box(coords(3, 4), 1, 0, 3, 4), ValueError, "does not fit");
  KILN_EXPECT_ERROR(crop_to_bounding_box(HostTensor::zeros(Shape(DType::kU8, {4, 4})), 0, 0, 1, 1), ShapeError,
                    "[height, width, channels]");
}

// TF's rule: int((side - side * fraction) / 2) off each end: 5 * 0.5 -> 1 off each end (3 left),
// 4 * 0.5 -> 1 (2 left); 0.9 of 5 -> int(0.25) = 0: unchanged.
TEST(ImageGeometryTest, CentralCropCutsTensorFlowsBorder) {
  EXPECT_EQ(values(central_crop(coords(5, 4), 0.5)), (std::vector<int32_t>{11, 12, 21, 22, 31, 32}));
  EXPECT_EQ(central_crop(coords(5, 5), 0.9).dims(), (Dims{5, 5, 1}));
  KILN_EXPECT_ERROR(central_crop(coords(5, 5), 0.0), ValueError, "central_fraction=0");
}

// 2x4 into 4x4: ratio max(4/4, 2/4) = 1, so no resize; (4 - 2) / 2 = 1 zero row above and below.
// 4x2 into 3x3: ratio max(2/3, 4/3) = 4/3: resized to floor(3) x floor(1.5) = 3x1, padding
// (3 - 1.5) / 2 = 0.75 -> 0 columns left.
// Keras's smart_resize window: 6x7 to 4:5 keeps int(7 * 4 / 5) = 5 rows, all 7 columns, top
// int(1 / 2) = 0; 10x4 to 1:1 keeps the middle 4 rows (top 3).
TEST(ImageGeometryTest, AspectRatioCropWindowIsKerasSmartResize) {
  const CropWindow a = aspect_ratio_crop_window(6, 7, 4, 5);
  EXPECT_EQ((std::vector<int64_t>{a.top, a.left, a.height, a.width}), (std::vector<int64_t>{0, 0, 5, 7}));
  const CropWindow b = aspect_ratio_crop_window(10, 4, 8, 8);
  EXPECT_EQ((std::vector<int64_t>{b.top, b.left, b.height, b.width}), (std::vector<int64_t>{3, 0, 4, 4}));
  KILN_EXPECT_ERROR(aspect_ratio_crop_window(0, 4, 2, 2), ValueError, "at least 1");
}

TEST(ImageGeometryTest, ResizeWithPadFitsThenCentres) {
  const HostTensor out = resize_with_pad(coords(2, 4), 4, 4, {.method = "nearest"});
  EXPECT_EQ(values(out), (std::vector<int32_t>{0, 0, 0, 0, 0, 1, 2, 3, 10, 11, 12, 13, 0, 0, 0, 0}));
  const HostTensor tall = resize_with_pad(coords(4, 2), 3, 3, {.method = "nearest"});
  EXPECT_EQ(tall.dims(), (Dims{3, 3, 1}));
  const auto t = values(tall);
  EXPECT_EQ((std::vector<int32_t>{t[1], t[2], t[4], t[5], t[7], t[8]}), (std::vector<int32_t>(6, 0)));
  EXPECT_EQ(resize_with_pad(coords(2, 4), 4, 4).dtype(), DType::kF32);
}

TEST(ImageGeometryTest, FlipsMirrorTheRightAxis) {
  EXPECT_EQ(values(flip_left_right(coords(2, 3))), (std::vector<int32_t>{2, 1, 0, 12, 11, 10}));
  EXPECT_EQ(values(flip_up_down(coords(2, 3))), (std::vector<int32_t>{10, 11, 12, 0, 1, 2}));
  // Pixels move whole: channels keep their order.
  const HostTensor rgb = HostTensor::from_vector<uint8_t>({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(flip_left_right(rgb).to_vector<int32_t>(), (std::vector<int32_t>{4, 5, 6, 1, 2, 3}));
}

// Stateless: the same seed gives the same flips in any run; image b of a batch is flipped when
// draw b of the seed is below 0.5, so a batch mixes flipped and unflipped images.
TEST(ImageGeometryTest, RandomFlipsAreStatelessPerImage) {
  std::vector<int32_t> v;
  for (int b = 0; b < 16; ++b)
    for (int x = 0; x < 3; ++x) v.push_back(b * 10 + x);
  const HostTensor batch = HostTensor::from_vector<int32_t>({16, 1, 3, 1}, v);
  const StatelessSeed seed{7, 42};
  const HostTensor once = random_flip_left_right(batch, seed);
  EXPECT_EQ(values(once), values(random_flip_left_right(batch, seed)));
  int flipped = 0;
  const auto o = values(once);
  for (int b = 0; b < 16; ++b) {
    const bool want = stateless_uniform(seed, static_cast<uint64_t>(b)) < 0.5f;
    EXPECT_EQ(o[b * 3] == b * 10 + 2, want) << b;
    flipped += want;
  }
  EXPECT_GT(flipped, 0);
  EXPECT_LT(flipped, 16);
  EXPECT_NE(values(random_flip_up_down(HostTensor::from_vector<int32_t>({2, 1, 1}, {1, 2}), {1, 1})).empty(), true);
}

TEST(ImageGeometryTest, RandomCropIsStatelessAndInBounds) {
  const HostTensor image = coords(6, 7);
  std::set<int32_t> corners;
  for (int64_t s = 0; s < 40; ++s) {
    const HostTensor crop = random_crop(image, 3, 2, {s, 5});
    ASSERT_EQ(crop.dims(), (Dims{3, 2, 1}));
    const auto c = values(crop);
    EXPECT_EQ(c, values(random_crop(image, 3, 2, {s, 5})));
    const int32_t y = c[0] / 10, x = c[0] % 10;
    ASSERT_TRUE(y >= 0 && y <= 3 && x >= 0 && x <= 5) << c[0];
    EXPECT_EQ(c, values(crop_to_bounding_box(image, y, x, 3, 2)));
    corners.insert(c[0]);
  }
  EXPECT_GT(corners.size(), 10u);  // 24 offsets possible: the seeds reach many of them
  KILN_EXPECT_ERROR(random_crop(image, 7, 2, {0, 0}), ValueError, "fit in the 6x7 image");
}

}  // namespace
}  // namespace kiln::data
