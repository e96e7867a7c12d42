// Keras's image preprocessing layers: inference outputs by hand (Resizing against
// data::resize too), the random layers' training invariants (a flip is the input or its
// mirror, a crop a window of it, contrast and brightness one factor or delta per image, a
// quarter turn and a zoom or shift by hand, fill modes as TF maps coordinates), seeds, Keras 2
// and Keras 3 configs, and a model with every layer trained in the compiled step, saved and
// reloaded in .h5 and .keras.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kiln/data/image/image_geometry.h"
#include "kiln/data/image/resize.h"
#include "kiln/keras/layers/image_preprocessing.h"
#include "kiln/keras/layers/random_affine_layers.h"
#include "kiln/keras/layers/random_image_layers.h"
#include "tests/keras/layers/layer_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using kiln::testing::random_f64;
using testing::ramp;

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

// Image b of an [n, h, w, c] tensor's values.
std::vector<float> image_of(const std::vector<float>& v, int64_t b, int64_t per_image) {
  return {v.begin() + b * per_image, v.begin() + (b + 1) * per_image};
}

TEST(ResizingTest, IsTfImageResizeInsideTheStep) {
  // 2x2 -> 4x4 half-pixel bilinear (see tests/data/image/resize_test.cpp for the hand values).
  const Tensor square = Tensor::from_vector<float>({1, 2, 2, 1}, {0, 10, 20, 30});
  EXPECT_EQ(values(Resizing(4, 4)(square)),
            (std::vector<float>{0, 2.5, 7.5, 10, 5, 7.5, 12.5, 15, 15, 17.5, 22.5, 25, 20, 22.5, 27.5, 30}));
  // u8 pixels come out f32; "nearest" picks half-pixel neighbours exactly.
  const Tensor row = Tensor::from_vector<uint8_t>({1, 1, 4, 1}, {1, 2, 3, 4});
  EXPECT_EQ(values(Resizing(1, 2, {.interpolation = "nearest"})(row)), (std::vector<float>{2, 4}));
  // Every method against the host resize on a random batch (the matmuls sum in another order).
  const HostTensor x = random_f64({2, 5, 7, 3}, 4, 0, 255).astype(DType::kF32);
  for (const char* method : {"bilinear", "nearest", "bicubic", "area", "lanczos3", "gaussian", "mitchellcubic"}) {
    SCOPED_TRACE(method);
    for (auto [h, w] : {std::pair<int64_t, int64_t>{3, 4}, {9, 11}}) {
      const std::vector<float> want = data::resize(x, h, w, {.method = method}).to_vector<float>();
      expect_near_all(values(Resizing(h, w, {.interpolation = method})(Tensor(x))), want, 2e-3f);
    }
  }
  // crop_to_aspect_ratio: the centred 4x4 of a 4x6 image, then 2x2; pad_to_aspect_ratio: a
  // 2x4 image padded to 4x4 with one fill row above and below.
  const HostTensor wide = ramp({1, 4, 6, 1});
  const HostTensor window = data::crop_to_bounding_box(wide, 0, 1, 4, 4);
  EXPECT_EQ(values(Resizing(2, 2, {.crop_to_aspect_ratio = true})(Tensor(wide))),
            data::resize(window, 2, 2).to_vector<float>());
  const Tensor padded = Resizing(4, 4, {.pad_to_aspect_ratio = true, .fill_value = -1})(Tensor(ramp({1, 2, 4, 1})));
  EXPECT_EQ(values(padded), (std::vector<float>{-1, -1, -1, -1, 1, 2, 3, 4, 5, 6, 7, 8, -1, -1, -1, -1}));
  KILN_EXPECT_ERROR(Resizing(2, 2, {.interpolation = "cubic"}), ValueError, "\"cubic\"");
  KILN_EXPECT_ERROR(Resizing(0, 2), ValueError, "height and width must be at least 1");
}

TEST(ResizingTest, GradientFlowsThroughTheMatmuls) {
  for (const char* method : {"bilinear", "bicubic", "area"}) {
    SCOPED_TRACE(method);
    Resizing r(3, 5, {.interpolation = method, .dtype = "float64"});
    EXPECT_TRUE(testing::check_layer_gradients(r, random_f64({2, 4, 6, 2}, 3), false, testing::f64_grad_options()));
  }
}

TEST(CenterCropTest, CutsTheCentreOrResizesASmallerImage) {
  // 4x5 -> 2x2: rows 1-2, columns 1-2 (int(3 / 2) = 1).
  EXPECT_EQ(values(CenterCrop(2, 2)(Tensor(ramp({1, 4, 5, 1})))), (std::vector<float>{7, 8, 12, 13}));
  // Smaller than the target: smart_resize (here the whole 2x2, bilinear to 4x4).
  const Tensor small = Tensor::from_vector<float>({1, 2, 2, 1}, {0, 10, 20, 30});
  EXPECT_EQ(values(CenterCrop(4, 4)(small)), values(Resizing(4, 4)(small)));
  CenterCrop c(3, 2);
  EXPECT_EQ(c.compute_output_shape({8, 8, 3}), (Dims{3, 2, 3}));
}

TEST(RandomFlipTest, EachImageIsItselfOrItsMirror) {
  const HostTensor x = random_f64({16, 3, 4, 2}, 1).astype(DType::kF32);
  const std::vector<float> xv = x.to_vector<float>();
  RandomFlip flip({.mode = "horizontal", .seed = 5});
  EXPECT_EQ(values(flip(Tensor(x), false)), xv);
  const std::vector<float> y = values(flip(Tensor(x), true));
  const std::vector<float> mirrored = data::flip_left_right(x).to_vector<float>();
  int flipped = 0;
  for (int64_t b = 0; b < 16; ++b) {
    const auto got = image_of(y, b, 24);
    const bool same = got == image_of(xv, b, 24), mirror = got == image_of(mirrored, b, 24);
    EXPECT_TRUE(same || mirror) << b;
    flipped += mirror;
  }
  EXPECT_GT(flipped, 1);
  EXPECT_LT(flipped, 15);
  // Both axes: each image is one of the four.
  const std::vector<float> ud = data::flip_up_down(x).to_vector<float>();
  const std::vector<float> both = data::flip_up_down(data::flip_left_right(x)).to_vector<float>();
  const std::vector<float> z = values(RandomFlip({.seed = 2})(Tensor(x), true));
  for (int64_t b = 0; b < 16; ++b) {
    const auto got = image_of(z, b, 24);
    EXPECT_TRUE(got == image_of(xv, b, 24) || got == image_of(mirrored, b, 24) || got == image_of(ud, b, 24) ||
                got == image_of(both, b, 24))
        << b;
  }
  // Seeded: a second layer with the seed draws the same first step; the next step differs.
  RandomFlip again({.mode = "horizontal", .seed = 5});
  EXPECT_EQ(values(again(Tensor(x), true)), y);
  EXPECT_NE(values(again(Tensor(x), true)), y);
  KILN_EXPECT_ERROR(RandomFlip({.mode = "diagonal"}), ValueError, "\"diagonal\"");
}

TEST(RandomCropTest, TrainingTakesAWindowInferenceTheCentre) {
  const HostTensor x = ramp({2, 6, 7, 1});
  RandomCrop crop(4, 5, {.seed = 3});
  EXPECT_EQ(crop.compute_output_shape({6, 7, 1}), (Dims{4, 5, 1}));
  // Inference: smart_resize: the centred 5x7 of the 4:5 aspect (rows 0-4 ... here 6x7 -> window
  // 5x7? int(7 * 4 / 5) = 5 rows, int(6 * 5 / 4) = 7 columns) resized to 4x5.
  const data::CropWindow w = data::aspect_ratio_crop_window(6, 7, 4, 5);
  EXPECT_EQ(w.height, 5);
  EXPECT_EQ(w.width, 7);
  expect_near_all(values(crop(Tensor(x), false)),
                  data::resize(data::crop_to_bounding_box(x, w.top, w.left, w.height, w.width), 4, 5).to_vector<float>(),
                  1e-4f);
  for (int step = 0; step < 4; ++step) {
    const std::vector<float> y = values(crop(Tensor(x), true));
    // The ramp's first value locates the window; the same window for the whole batch.
    const auto top_left = static_cast<int64_t>(y[0]) - 1;
    const int64_t oy = top_left / 7, ox = top_left % 7;
    ASSERT_LE(oy, 2);
    ASSERT_LE(ox, 2);
    EXPECT_EQ(y, data::crop_to_bounding_box(x, oy, ox, 4, 5).to_vector<float>());
  }
}

TEST(RandomContrastTest, OneFactorPerImageInRangeAndClipped) {
  const HostTensor x = random_f64({8, 3, 3, 1}, 7, 50, 200).astype(DType::kF32);
  RandomContrast contrast(0.5, {.seed = 1});
  EXPECT_EQ(values(contrast(Tensor(x), false)), x.to_vector<float>());
  const std::vector<float> y = values(contrast(Tensor(x), true)), xv = x.to_vector<float>();
  for (int64_t b = 0; b < 8; ++b) {
    const auto xi = image_of(xv, b, 9), yi = image_of(y, b, 9);
    double m = 0;
    for (float v : xi) m += v / 9.0;
    size_t far = 0;  // the pixel farthest from the mean gives the factor most exactly
    for (size_t i = 1; i < 9; ++i)
      if (std::abs(xi[i] - m) > std::abs(xi[far] - m)) far = i;
    const double c = (yi[far] - m) / (xi[far] - m);
    EXPECT_GE(c, 0.5 - 1e-4);
    EXPECT_LE(c, 1.5 + 1e-4);
    for (size_t i = 0; i < 9; ++i)
      EXPECT_NEAR(yi[i], std::clamp((xi[i] - m) * c + m, 0.0, 255.0), 1e-2) << b << " " << i;
  }
  KILN_EXPECT_ERROR(RandomContrast(-0.1), ValueError, "factor must be non-negative");
}

TEST(RandomBrightnessTest, OneDeltaPerImageScaledToTheValueRange) {
  const HostTensor x = random_f64({8, 2, 2, 3}, 9, 0.3, 0.7).astype(DType::kF32);
  RandomBrightness bright({0.1, 0.2}, {.value_range = {0, 1}, .seed = 4});
  const std::vector<float> y = values(bright(Tensor(x), true)), xv = x.to_vector<float>();
  for (int64_t b = 0; b < 8; ++b) {
    const float d = y[b * 12] - xv[b * 12];
    EXPECT_GE(d, 0.1f - 1e-6f);
    EXPECT_LE(d, 0.2f + 1e-6f);
    for (int64_t i = 0; i < 12; ++i) EXPECT_NEAR(y[b * 12 + i] - xv[b * 12 + i], d, 1e-6f);
  }
  // Clipped to value_range: a full-white shift saturates.
  EXPECT_EQ(values(RandomBrightness({1.0, 1.0}, {.value_range = {0, 1}})(Tensor(x), true)),
            std::vector<float>(x.num_elements(), 1.0f));
  EXPECT_EQ(values(bright(Tensor(x), false)), xv);
}

TEST(RandomAffineTest, QuarterTurnZoomAndShiftByHand) {
  const HostTensor x = ramp({1, 4, 4, 1});  // in(x, y) = 1 + x + 4y
  const std::vector<float> xv = x.to_vector<float>();
  // factor (0.25, 0.25): a quarter turn counter-clockwise; out(x, y) = in(3 - y, x).
  RandomRotation turn({0.25, 0.25});
  EXPECT_EQ(values(turn(Tensor(x), false)), xv);
  std::vector<float> want(16);
  for (int y = 0; y < 4; ++y)
    for (int c = 0; c < 4; ++c) want[y * 4 + c] = xv[c * 4 + (3 - y)];
  expect_near_all(values(turn(Tensor(x), true)), want, 1e-4f);
  // Zoom in 2x about the centre: out(x, y) reads (0.5 x + 0.75, 0.5 y + 0.75); the ramp is linear.
  std::vector<float> zoomed(16);
  for (int y = 0; y < 4; ++y)
    for (int c = 0; c < 4; ++c) zoomed[y * 4 + c] = 1 + (0.5f * c + 0.75f) + 4 * (0.5f * y + 0.75f);
  expect_near_all(values(RandomZoom(Factor(-0.5, -0.5))(Tensor(x), true)), zoomed, 1e-5f);
  // Down by half the height (2 rows): the two new rows by fill mode (TF's MapCoordinate).
  auto shifted = [&](const std::string& mode) {
    return values(RandomTranslation({0.5, 0.5}, {0.0, 0.0}, {.fill_mode = mode, .fill_value = -1})(Tensor(x), true));
  };
  auto rows = [&](std::vector<int> r) {
    std::vector<float> out;
    for (int i : r)
      for (int c = 0; c < 4; ++c) out.push_back(i < 0 ? -1.0f : xv[i * 4 + c]);
    return out;
  };
  EXPECT_EQ(shifted("constant"), rows({-1, -1, 0, 1}));
  EXPECT_EQ(shifted("reflect"), rows({1, 0, 0, 1}));   // d c b a | a b c d
  EXPECT_EQ(shifted("wrap"), rows({2, 3, 0, 1}));      // a b c d | a b c d
  EXPECT_EQ(shifted("nearest"), rows({0, 0, 0, 1}));   // a a a a | a b c d
  KILN_EXPECT_ERROR(RandomRotation(0.1, {.fill_mode = "mirror"}), ValueError, "\"mirror\"");
  KILN_EXPECT_ERROR(RandomZoom(1.5), ValueError, "must lie in [-1, 1]");
}

TEST(RandomAffineTest, RandomDrawsStayInTheirRanges) {
  // A constant image stays constant under any rotation with fill_mode "nearest"; under
  // "constant" 0 a rotation of at most 0.05 turns keeps the centre pixel.
  const HostTensor ones = HostTensor::from_vector<float>({4, 5, 5, 1}, std::vector<float>(100, 1.0f));
  expect_near_all(values(RandomRotation(0.5, {.fill_mode = "nearest", .seed = 1})(Tensor(ones), true)),
                  std::vector<float>(100, 1.0f), 1e-5f);
  const std::vector<float> r = values(RandomRotation(0.05, {.fill_mode = "constant", .seed = 1})(Tensor(ones), true));
  for (int b = 0; b < 4; ++b) EXPECT_NEAR(r[b * 25 + 12], 1.0f, 1e-5f);
  // Translation by at most 0.2 of 5 pixels (1 pixel) with "constant": the centre 3x3 keeps 1s.
  const std::vector<float> t = values(RandomTranslation(0.2, 0.2, {.fill_mode = "constant", .seed = 2})(Tensor(ones), true));
  for (int b = 0; b < 4; ++b)
    for (int y = 1; y < 4; ++y)
      for (int c = 1; c < 4; ++c) EXPECT_NEAR(t[b * 25 + y * 5 + c], 1.0f, 1e-5f);
}

TEST(ImagePreprocessingConfigTest, RoundTripsAndReadsKeras2AndKeras3) {
  std::vector<LayerHandle> layers = {
      Resizing(4, 5, {.interpolation = "area", .crop_to_aspect_ratio = true}),
      CenterCrop(3, 3),
      RandomFlip({.mode = "vertical", .seed = 3}),
      RandomCrop(2, 2, {.seed = 1}),
      RandomContrast({0.1, 0.3}, {.value_range = {0, 1}}),
      RandomBrightness(0.2, {.seed = 9}),
      RandomRotation(0.1, {.fill_mode = "constant", .fill_value = 2}),
      RandomZoom(0.2, Factor(-0.1, 0.3), {.interpolation = "nearest"}),
      RandomTranslation({-0.1, 0.2}, 0.3),
  };
  for (const LayerHandle& l : layers) testing::expect_config_round_trip(*l);
  RandomRotation rot(0.1);
  rot.set_name("random_rotation");
  EXPECT_EQ(rot.get_config(), R"({"dtype":"float32","factor":[-0.1,0.1],"fill_mode":"reflect","fill_value":0.0,)"
                              R"("interpolation":"bilinear","name":"random_rotation","seed":null,"trainable":true})");
  // tf.keras 2.15's forms (a single factor; RandomContrast without value_range).
  EXPECT_EQ(layer_from_config("RandomContrast", R"({"name": "c", "trainable": true, "dtype": "float32",
      "factor": 0.2, "seed": null})")->get_config(),
            R"({"dtype":"float32","factor":[0.2,0.2],"name":"c","seed":null,"trainable":true,"value_range":[0.0,255.0]})");
  EXPECT_EQ(layer_from_config("Resizing", R"({"name": "r", "trainable": true, "dtype": "float32", "height": 8,
      "width": 8, "interpolation": "bilinear", "crop_to_aspect_ratio": false})")->class_name(), "Resizing");
  // Keras 3's forms: data_format and a DTypePolicy.
  const char* policy = R"({"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
      "registered_name": null})";
  const std::string k3 = std::string(R"({"name": "random_flip", "trainable": true, "dtype": )") + policy +
                         R"(, "seed": 1337, "mode": "horizontal", "data_format": "channels_last"})";
  EXPECT_EQ(layer_from_config("RandomFlip", k3)->get_config(),
            R"({"dtype":"float32","mode":"horizontal","name":"random_flip","seed":1337,"trainable":true})");
  KILN_EXPECT_ERROR(layer_from_config("RandomFlip", R"({"mode": "horizontal", "data_format": "channels_first"})"),
                    ConfigError, "channels_last");
  KILN_EXPECT_ERROR(layer_from_config("RandomZoom", R"({"height_factor": "big"})"), ConfigError,
                    "a number or a list of two numbers");
}

TEST(ImagePreprocessingModelTest, TrainsInTheCompiledStepAndSavesInBothFormats) {
  Sequential model({InputLayer({.shape = {8, 8, 3}}), Resizing(10, 10), RandomFlip({.seed = 1}),
                    RandomRotation(0.1, {.seed = 2}), RandomZoom(0.1, std::nullopt, {.seed = 3}),
                    RandomTranslation(0.1, 0.1, {.seed = 4}), RandomCrop(8, 8, {.seed = 5}),
                    RandomContrast(0.2, {.seed = 6}), RandomBrightness(0.1, {.seed = 7}), CenterCrop(6, 6),
                    Rescaling(1.0 / 255), Flatten(), Dense(2)});
  model.compile({.optimizer = SGD({.learning_rate = 0.01}), .loss = SparseCategoricalCrossentropy({.from_logits = true})});
  const HostTensor x = random_f64({8, 8, 8, 3}, 5, 0, 255).astype(DType::kF32);
  HostTensor y(Shape(DType::kI32, {8}));
  const History h = model.fit(data::Dataset::from_tensor_slices({x, y}).batch(4, /*drop_remainder=*/true),
                              {.epochs = 2, .verbose = 0});
  for (double loss : h.history.at("loss")) EXPECT_TRUE(std::isfinite(loss));
}

}  // namespace
}  // namespace kiln::keras
