// resize against values computed by hand from TF 2's definitions (half-pixel centers: output
// pixel x samples input position (x + 0.5) * in / out - 0.5), each method's edge rules, the
// antialiased kernels' spans, and use in a host map.
#include "kiln/data/image/resize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "kiln/data/dataset.h"
#include "kiln/data/readers/npy_reader.h"
#include "tests/data/image/image_fixtures.h"
#include "tests/testing/expect_error.h"

namespace kiln::data {
namespace {

using testing::ImageFixtures;

HostTensor image(int64_t h, int64_t w, std::vector<float> values) {
  return HostTensor::from_vector<float>({h, w, 1}, values);
}

void expect_near_all(const HostTensor& got, const std::vector<float>& want, float tol = 1e-5f) {
  const auto v = got.to_vector<float>();
  ASSERT_EQ(v.size(), want.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], want[i], tol) << "element " << i;
}

// 2x2 -> 4x4. Columns sample x_in = -0.25, 0.25, 0.75, 1.25: clamped to the edge pixel at
// both ends, weights (0.75, 0.25) and (0.25, 0.75) inside; rows likewise. With corners
// 0, 10 / 20, 30 the result is col(x) + row(y), col = 0, 2.5, 7.5, 10 and row = 0, 5, 15, 20.
TEST(ResizeTest, BilinearUpsamplesWithHalfPixelCenters) {
  const HostTensor out = resize(image(2, 2, {0, 10, 20, 30}), 4, 4);
  EXPECT_EQ(out.shape(), Shape(DType::kF32, {4, 4, 1}));
  expect_near_all(out, {0, 2.5, 7.5, 10, 5, 7.5, 12.5, 15, 15, 17.5, 22.5, 25, 20, 22.5, 27.5, 30});
}

// 1x4 -> 1x2: x_in = 0.5 and 2.5, the mean of each pair, [0, 10, 20, 40] -> [5, 30]. With
// antialias the triangle kernel is stretched by in/out = 2 and centred at (x + 0.5) * 2:
// output 0 sees inputs 0, 1, 2 at distances 0.5, 0.5, 1.5 (/2: weights 0.75, 0.75, 0.25,
// normalized /1.75) = 50/7; output 1 sees inputs 1, 2, 3 weighted 0.25, 0.75, 0.75 = 190/7.
TEST(ResizeTest, BilinearDownsamplesAndAntialiasWidensTheKernel) {
  const HostTensor row = image(1, 4, {0, 10, 20, 40});
  expect_near_all(resize(row, 1, 2), {5, 30});
  expect_near_all(resize(row, 1, 2, {.antialias = true}), {50.0f / 7, 190.0f / 7});
  // Upsampling: antialias changes nothing (the kernel is not stretched below 1); the
  // triangle kernel then is bilinear interpolation.
  const HostTensor square = image(2, 2, {0, 10, 20, 30});
  expect_near_all(resize(square, 4, 4, {.antialias = true}), resize(square, 4, 4).to_vector<float>());
}

// TF's area example: in[4] -> out[3], scale 4/3: out0 = (in0 + in1/3) * 3/4, out1 = (in1 * 2/3 +
// in2 * 2/3) * 3/4, out2 = (in2/3 + in3) * 3/4. And 4x4 -> 2x2 is the mean of each 2x2 block.
TEST(ResizeTest, AreaAveragesTheCoveredInput) {
  expect_near_all(resize(image(1, 4, {3, 6, 9, 12}), 1, 3, {.method = "area"}), {3.75, 7.5, 11.25});
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i * i);
  const HostTensor out = resize(image(4, 4, v), 2, 2, {.method = "area"});
  auto block = [&](int r, int c) { return (v[r * 8 + c * 2] + v[r * 8 + c * 2 + 1] + v[r * 8 + 4 + c * 2] + v[r * 8 + 5 + c * 2]) / 4; };
  expect_near_all(out, {block(0, 0), block(0, 1), block(1, 0), block(1, 1)}, 1e-4f);
  // Area ignores antialias (it always averages).
  expect_near_all(resize(image(4, 4, v), 2, 2, {.method = "area", .antialias = true}), out.to_vector<float>(), 0);
}

// Nearest: input index floor((x + 0.5) * in / out). 2 -> 5: 0.2, 0.6, 1.0, 1.4, 1.8 ->
// 0, 0, 1, 1, 1. 5 -> 2: 1.25, 3.75 -> 1, 3. The dtype and values are kept.
TEST(ResizeTest, NearestKeepsTheDtypeAndPicksHalfPixelNeighbours) {
  const HostTensor row = HostTensor::from_vector<uint8_t>({1, 2, 2}, {1, 100, 2, 200});
  const HostTensor up = resize(row, 1, 5, {.method = "nearest"});
  EXPECT_EQ(up.shape(), Shape(DType::kU8, {1, 5, 2}));
  EXPECT_EQ(up.to_vector<int32_t>(), (std::vector<int32_t>{1, 100, 1, 100, 2, 200, 2, 200, 2, 200}));
  const HostTensor five = HostTensor::from_vector<int32_t>({1, 5, 1}, {10, 11, 12, 13, 14});
  EXPECT_EQ(resize(five, 1, 2, {.method = "nearest"}).to_vector<int32_t>(), (std::vector<int32_t>{11, 13}));
}

// Keys' cubic (a = -0.5) reproduces polynomials up to degree 2, so away from the edges an
// upsampled ramp is the ramp at the sample positions: 1x8 of 10 * i -> 1x16 samples
// x_in = x / 2 - 0.25 (table offsets 256 and 768: exact entries). At the edges the taps outside
// the image get weight 0 and the rest are renormalized, as TF does.
TEST(ResizeTest, BicubicReproducesARampInsideAndRenormalizesAtEdges) {
  std::vector<float> ramp(8);
  for (int i = 0; i < 8; ++i) ramp[i] = 10.0f * static_cast<float>(i);
  const auto out = resize(image(1, 8, ramp), 1, 16, {.method = "bicubic"}).to_vector<float>();
  for (int x = 3; x < 13; ++x) EXPECT_NEAR(out[x], 10.0f * (x / 2.0f - 0.25f), 1e-4f) << x;
  // x = 0: x_in = -0.25: of the taps -2, -1, 0, 1 only pixels 0 and 1 are inside, at
  // distances 0.25 and 1.25: w(0.25) = 1.5 * 0.25^3 - 2.5 * 0.25^2 + 1 = 0.8671875 and
  // w(1.25) = -0.5 * 1.25^3 + 2.5 * 1.25^2 - 4 * 1.25 + 2 = -0.0703125, renormalized.
  const float w0 = 0.8671875f, w1 = -0.0703125f;
  EXPECT_NEAR(out[0], (w0 * 0 + w1 * 10) / (w0 + w1), 1e-4f);
}

// Every method's weights sum to 1: a constant image stays constant, at any size.
TEST(ResizeTest, EveryMethodKeepsAConstantImage) {
  const HostTensor flat = HostTensor::from_vector<float>({5, 7, 2}, std::vector<float>(70, 42.0f));
  for (const char* method : {"bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic"}) {
    for (bool antialias : {false, true}) {
      for (auto [h, w] : {std::pair{3, 2}, {11, 13}, {5, 7}}) {
        SCOPED_TRACE(std::string(method) + (antialias ? " antialias" : ""));
        const auto v = resize(flat, h, w, {.method = method, .antialias = antialias}).to_vector<float>();
        ASSERT_EQ(v.size(), static_cast<size_t>(h * w * 2));
        for (float x : v) ASSERT_NEAR(x, 42.0f, 1e-4f);
      }
    }
  }
}

// Batches resize image by image; preserve_aspect_ratio fits inside the size.
TEST(ResizeTest, BatchesAndPreservesTheAspectRatio) {
  std::vector<float> a(2 * 3 * 4);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) * 3;
  const HostTensor batch = HostTensor::from_vector<float>({2, 3, 4, 1}, a);
  const HostTensor out = resize(batch, 5, 6, {.method = "bicubic"});
  EXPECT_EQ(out.dims(), (Dims{2, 5, 6, 1}));
  for (int b = 0; b < 2; ++b) {
    const auto one = resize(batch.slice_rows(b, b + 1).reshape({3, 4, 1}), 5, 6, {.method = "bicubic"}).to_vector<float>();
    const auto all = out.to_vector<float>();
    EXPECT_EQ(std::vector<float>(all.begin() + b * 30, all.begin() + (b + 1) * 30), one);
  }
  const HostTensor wide = HostTensor::zeros(Shape(DType::kU8, {50, 100, 3}));
  EXPECT_EQ(resize(wide, 30, 30, {.preserve_aspect_ratio = true}).dims(), (Dims{15, 30, 3}));
  EXPECT_EQ(resize(wide, 100, 300, {.preserve_aspect_ratio = true}).dims(), (Dims{100, 200, 3}));
}

// PIL resamples float images exactly as TF's antialiased scale_and_translate (see the fixture
// script): an independent implementation of the same definition, in double.
TEST(ResizeTest, AntialiasedKernelsMatchPilsFloatResampling) {
  KILN_IMAGE_FIXTURES(fx);
  int compared = 0;
  float worst = 0;
  for (const auto& c : fx->cases("resize")) {
    SCOPED_TRACE(c.expected);
    const HostTensor expected = read_npy(fx->file(c.expected));
    const HostTensor got = resize(read_npy(fx->file(c.file)), c.height, c.width, {.method = c.method, .antialias = true});
    ASSERT_EQ(got.shape(), expected.shape());
    const auto g = got.to_vector<float>(), e = expected.to_vector<float>();
    for (size_t i = 0; i < g.size(); ++i) {
      EXPECT_NEAR(g[i], e[i], 1e-3f) << i;  // values in [0, 100): f32 rounding of ~10 terms
      worst = std::max(worst, std::abs(g[i] - e[i]));
    }
    ++compared;
  }
  EXPECT_GE(compared, 12);
  std::printf("antialiased resize vs PIL: %d cases, max |diff| %g\n", compared, static_cast<double>(worst));
}

// The same without antialias against numpy (the fixture script's tf_axis_weights: TF 2's
// half-pixel definitions in double): bilinear, nearest, area, and bicubic (TF samples Keys'
// kernel from a 1024-entry table, hence its looser bound).
TEST(ResizeTest, NonAntialiasedMethodsMatchNumpysHalfPixelDefinitions) {
  KILN_IMAGE_FIXTURES(fx);
  int compared = 0;
  for (const auto& c : fx->cases("resize_tf")) {
    SCOPED_TRACE(c.expected);
    const HostTensor expected = read_npy(fx->file(c.expected));
    const HostTensor got = resize(read_npy(fx->file(c.file)), c.height, c.width, {.method = c.method});
    ASSERT_EQ(got.shape(), expected.shape());
    const auto g = got.to_vector<float>(), e = expected.to_vector<float>();
    const float tol = c.method == "bicubic" ? 2e-3f : 1e-5f;  // values in [0, 1)
    for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], e[i], tol) << i;
    ++compared;
  }
  EXPECT_EQ(compared, 16);
}

// resize_weights is resize's own arithmetic as a matrix: W_h * image * W_w^T is resize's
// result for every method, and each row of a method that interpolates sums to 1.
TEST(ResizeTest, WeightsReproduceResizeAsTwoMatrixProducts) {
  const HostTensor img = HostTensor::from_vector<float>({3, 4, 1}, {0, 1, 4, 9, 16, 25, 36, 49, 64, 81, 100, 121});
  for (const char* method : {"bilinear", "nearest", "bicubic", "area", "lanczos5", "gaussian"}) {
    SCOPED_TRACE(method);
    const HostTensor wy = resize_weights(3, 5, {.method = method}), wx = resize_weights(4, 2, {.method = method});
    ASSERT_EQ(wy.dims(), (Dims{5, 3}));
    const auto y = wy.to_vector<float>(), x = wx.to_vector<float>(), v = img.to_vector<float>();
    std::vector<float> want(10);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 2; ++j) {
        double sum = 0;
        for (int r = 0; r < 3; ++r)
          for (int c = 0; c < 4; ++c) sum += double{y[i * 3 + r]} * v[r * 4 + c] * x[j * 4 + c];
        want[i * 2 + j] = static_cast<float>(sum);
      }
    expect_near_all(resize(img, 5, 2, {.method = method}), want, 1e-3f);
    for (int i = 0; i < 5; ++i) EXPECT_NEAR(y[i * 3] + y[i * 3 + 1] + y[i * 3 + 2], 1.0f, 1e-6f);
  }
  KILN_EXPECT_ERROR(resize_weights(3, 2, {.preserve_aspect_ratio = true}), ValueError, "preserve_aspect_ratio=false");
}

TEST(ResizeTest, RejectsBadArguments) {
  const HostTensor img = HostTensor::zeros(Shape(DType::kF32, {2, 2, 1}));
  KILN_EXPECT_ERROR(resize(img, 0, 4), ValueError, "height=0");
  KILN_EXPECT_ERROR(resize(img, 4, 4, {.method = "cubic"}), ValueError, "\"cubic\"");
  KILN_EXPECT_ERROR(resize(HostTensor::zeros(Shape(DType::kF32, {4, 4})), 2, 2), ShapeError, "[height, width, channels]");
  KILN_EXPECT_ERROR(resize(HostTensor::zeros(Shape(DType::kF32, {0, 4, 1})), 2, 2), ShapeError, "non-empty");
}

TEST(ResizeTest, RunsInAHostMap) {
  std::vector<uint8_t> pixels(4 * 6 * 8 * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i);
  const HostTensor images = HostTensor::from_vector<uint8_t>({4, 6, 8, 3}, pixels);
  Dataset ds = Dataset::from_tensor_slices(images)
                   .map([](HostTensor im) { return resize(im, 3, 4, {.antialias = true}); }, AUTOTUNE)
                   .batch(4);
  auto batch = ds.iterator().next();
  ASSERT_TRUE(batch);
  EXPECT_EQ((*batch)[0].shape(), Shape(DType::kF32, {4, 3, 4, 3}));
  EXPECT_EQ((*batch)[0].to_vector<float>(), resize(images, 3, 4, {.antialias = true}).to_vector<float>());
}

}  // namespace
}  // namespace kiln::data
