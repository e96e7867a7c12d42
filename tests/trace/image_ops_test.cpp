// tf.image's traced ops by hand: flips, crops, brightness and contrast per image,
// per_image_standardization, grayscale, the separable resize, and the projective transform's
// identity and half-pixel shift; each eagerly and inside a compiled kiln::function.
#include "kiln/trace/ops/image.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kiln/trace/function.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/traced_map.h"
#include "tests/testing/expect_error.h"

namespace kiln {
namespace {

// [1, 2, 3, 1] holding 1..6, rows (1 2 3), (4 5 6).
Tensor small() { return Tensor::from_vector<float>({1, 2, 3, 1}, {1, 2, 3, 4, 5, 6}); }

TEST(ImageOpsTest, FlipsAndCrops) {
  EXPECT_EQ(flip_left_right(small()).to_vector<float>(), (std::vector<float>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(flip_up_down(small()).to_vector<float>(), (std::vector<float>{4, 5, 6, 1, 2, 3}));
  EXPECT_EQ(crop_to_bounding_box(small(), 1, 1, 1, 2).to_vector<float>(), (std::vector<float>{5, 6}));
  // An unbatched image keeps its rank.
  const Tensor image = Tensor::from_vector<float>({2, 3, 1}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(flip_left_right(image).dims(), (Dims{2, 3, 1}));
  KILN_EXPECT_ERROR(crop_to_bounding_box(small(), 1, 2, 2, 2), ValueError, "must lie inside");
  KILN_EXPECT_ERROR(flip_left_right(Tensor::from_vector<float>({6}, {1, 2, 3, 4, 5, 6})), ShapeError, "[height, width");
}

TEST(ImageOpsTest, ColourAdjustments) {
  // Two images, one delta / factor each.
  const Tensor two = Tensor::from_vector<float>({2, 1, 2, 1}, {1, 3, 10, 20});
  const Tensor per = Tensor::from_vector<float>({2, 1, 1, 1}, {1, 2});
  EXPECT_EQ(adjust_brightness(two, per).to_vector<float>(), (std::vector<float>{2, 4, 12, 22}));
  // Means 2 and 15: (1 - 2) * 1 + 2 = 1, ...; (10 - 15) * 2 + 15 = 5, 25.
  EXPECT_EQ(adjust_contrast(two, per).to_vector<float>(), (std::vector<float>{1, 3, 5, 25}));
  // Mean 3.5, population stddev sqrt(35 / 12).
  const std::vector<float> s = per_image_standardization(small()).to_vector<float>();
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(s[i], (i + 1 - 3.5) / std::sqrt(35.0 / 12), 1e-6) << i;
  // A constant image divides by 1 / sqrt(n), not by zero.
  EXPECT_EQ(per_image_standardization(Tensor::from_vector<float>({1, 1, 1}, {5})).to_vector<float>(),
            (std::vector<float>{0}));
  const Tensor rgb = Tensor::from_vector<float>({1, 1, 3}, {1, 2, 3});
  EXPECT_NEAR(rgb_to_grayscale(rgb).to_vector<float>()[0], 0.2989 + 2 * 0.5870 + 3 * 0.1140, 1e-6);
  EXPECT_EQ(grayscale_to_rgb(Tensor::from_vector<float>({1, 1, 1}, {7})).to_vector<float>(), (std::vector<float>{7, 7, 7}));
  KILN_EXPECT_ERROR(adjust_brightness(Tensor::from_vector<uint8_t>({1, 1, 1}, {1}), per), DTypeError, "floating");
}

TEST(ImageOpsTest, SeparableResizeAndProjectiveTransform) {
  // Columns 3 -> 2 by averaging pairs (weights [[.5 .5 0] [0 .5 .5]]), rows kept.
  const Tensor wy = Tensor::from_vector<float>({2, 2}, {1, 0, 0, 1});
  const Tensor wx = Tensor::from_vector<float>({2, 3}, {0.5, 0.5, 0, 0, 0.5, 0.5});
  EXPECT_EQ(resize_separable(small(), wy, wx).to_vector<float>(), (std::vector<float>{1.5, 2.5, 4.5, 5.5}));
  // The identity transform, and a shift by half a pixel to the right (x reads x - 0.5).
  const Tensor identity = Tensor::from_vector<float>({1, 8}, {1, 0, 0, 0, 1, 0, 0, 0});
  EXPECT_EQ(projective_transform(small(), identity).to_vector<float>(), small().to_vector<float>());
  const Tensor half = Tensor::from_vector<float>({1, 8}, {1, 0, -0.5, 0, 1, 0, 0, 0});
  // x = 0 reads -0.5: reflected to -(-0.5) - 1 = -0.5, clamped to 0 -> 1; then 1.5, 2.5.
  EXPECT_EQ(projective_transform(small(), half, {.fill_mode = "nearest"}).to_vector<float>(),
            (std::vector<float>{1, 1.5, 2.5, 4, 4.5, 5.5}));
  // Constant fill: the half outside reads 0.
  EXPECT_EQ(projective_transform(small(), half, {.fill_mode = "constant"}).to_vector<float>(),
            (std::vector<float>{0.5, 1.5, 2.5, 2, 4.5, 5.5}));
  // Nearest interpolation rounds half away from zero: -0.5 -> -1 (fill), 0.5 -> 1, 1.5 -> 2.
  EXPECT_EQ(projective_transform(small(), half, {.interpolation = "nearest", .fill_mode = "constant", .fill_value = 9})
                .to_vector<float>(),
            (std::vector<float>{9, 2, 3, 9, 5, 6}));
  // The same inside a compiled function.
  Function f = function("shift", [](const std::vector<Tensor>& x) {
    return projective_transform(x[0], x[1], {.fill_mode = "constant"});
  });
  EXPECT_EQ(f({small().value(), half.value()})[0].to_vector<float>(), (std::vector<float>{0.5, 1.5, 2.5, 2, 4.5, 5.5}));
}

// In a traced Dataset::map, per element and through map_and_batch (flip's gather runs the
// batch row by row, with the same values).
TEST(ImageOpsTest, RunInATracedDatasetMap) {
  const HostTensor images = HostTensor::from_vector<float>({2, 1, 3, 1}, {1, 2, 3, 4, 5, 6});
  auto augment = [](Tensor image) { return adjust_brightness(flip_left_right(image), Tensor::scalar(10)); };
  data::Iterator one = data::Dataset::from_tensor_slices({images}).map(augment).iterator();
  auto first = one.next();
  ASSERT_TRUE(first);
  EXPECT_EQ((*first)[0].to_vector<float>(), (std::vector<float>{13, 12, 11}));
  auto batch = data::Dataset::from_tensor_slices({images}).map(augment, {.num_parallel_calls = 2}).batch(2).iterator().next();
  ASSERT_TRUE(batch);
  EXPECT_EQ((*batch)[0].to_vector<float>(), (std::vector<float>{13, 12, 11, 16, 15, 14}));
}

}  // namespace
}  // namespace kiln
