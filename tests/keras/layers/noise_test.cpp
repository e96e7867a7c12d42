// SpatialDropout2D and GaussianNoise: identity in inference, whole-channel masks and noise
// moments in training, distinct draws per step, the normal quantiles under GaussianNoise
// against Python's statistics.NormalDist().inv_cdf, configs, and a saved model.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/trace/ops/random.h"
#include "tests/keras/layers/layer_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using kiln::testing::random_f64;

// y is x with each (example, channel) map either zeroed or doubled (rate 0.5); returns how
// many maps were zeroed. `at(n, c, p)` is the flat index of pixel p of map (n, c).
template <typename At>
int count_dropped_maps(const std::vector<float>& x, const std::vector<float>& y, int64_t n, int64_t c, int64_t pixels,
                       At at) {
  int dropped = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < c; ++k) {
      const bool zero = y[at(b, k, 0)] == 0;
      dropped += zero;
      for (int64_t p = 0; p < pixels; ++p) EXPECT_FLOAT_EQ(y[at(b, k, p)], zero ? 0 : 2 * x[at(b, k, p)]) << b << " " << k;
    }
  return dropped;
}

TEST(SpatialDropout2DTest, DropsWholeChannelsInTrainingOnly) {
  const HostTensor x = random_f64({8, 3, 3, 16}, 1, 1, 2).astype(DType::kF32);  // all >= 1: no zeros of its own
  SpatialDropout2D drop(0.5, {.seed = 7});
  EXPECT_EQ(drop(Tensor(x), /*training=*/false).to_vector<float>(), x.to_vector<float>());
  const std::vector<float> y = drop(Tensor(x), /*training=*/true).to_vector<float>();
  const int dropped = count_dropped_maps(x.to_vector<float>(), y, 8, 16, 9, [](int64_t b, int64_t k, int64_t p) {
    return static_cast<size_t>(b * 144 + p * 16 + k);
  });
  EXPECT_GT(dropped, 32);  // 128 maps at rate 0.5
  EXPECT_LT(dropped, 96);
  EXPECT_NE(drop(Tensor(x), /*training=*/true).to_vector<float>(), y);  // the next step draws anew

  const HostTensor xf = random_f64({4, 8, 3, 3}, 2, 1, 2).astype(DType::kF32);
  SpatialDropout2D first(0.5, {.data_format = "channels_first", .seed = 1});
  const int dropped_first = count_dropped_maps(xf.to_vector<float>(), first(Tensor(xf), true).to_vector<float>(), 4, 8, 9,
                                               [](int64_t b, int64_t k, int64_t p) { return static_cast<size_t>((b * 8 + k) * 9 + p); });
  EXPECT_GT(dropped_first, 4);
  EXPECT_LT(dropped_first, 28);
  KILN_EXPECT_ERROR(SpatialDropout2D(1.0), ValueError, "[SpatialDropout2D] expected rate in [0, 1)");
}

TEST(GaussianNoiseTest, AddsZeroMeanNoiseOfTheStddevInTrainingOnly) {
  const HostTensor x(Shape(DType::kF32, {64, 1000}));
  GaussianNoise noise(0.5, {.seed = 3});
  EXPECT_EQ(noise(Tensor(x), false).to_vector<float>(), x.to_vector<float>());
  const std::vector<float> y = noise(Tensor(x), true).to_vector<float>();
  double sum = 0, sq = 0;
  int within_one_sigma = 0;
  for (float v : y) {
    sum += v;
    sq += double(v) * v;
    within_one_sigma += std::abs(v) < 0.5;
  }
  const double n = static_cast<double>(y.size()), mean = sum / n, stddev = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(mean, 0, 0.01);  // 5 standard errors of 0.5 / sqrt(64000)
  EXPECT_NEAR(stddev, 0.5, 0.005);
  EXPECT_NEAR(within_one_sigma / n, 0.6827, 0.01);
  EXPECT_NE(noise(Tensor(x), true).to_vector<float>(), y);
  KILN_EXPECT_ERROR(GaussianNoise(-1), ValueError, "expected stddev >= 0");
}

TEST(GaussianNoiseTest, NormalQuantilesMatchPythonsInverseCdf) {
  // statistics.NormalDist().inv_cdf(p): the center and both tails of Acklam's approximation.
  const std::vector<double> p = {0.001, 0.02, 0.3, 0.5, 0.975, 0.9999};
  const std::vector<double> want = {-3.090232306167813, -2.053748910631823, -0.5244005127080407,
                                    0.0,                1.959963984540054,  3.719016485455709};
  const std::vector<double> got = normal_quantile(Tensor(HostTensor::from_vector<double>({6}, p))).to_vector<double>();
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-9 * std::max(1.0, std::abs(want[i]))) << p[i];
}

TEST(NoiseLayersTest, ConfigsRoundTripAndModelSavesAndLoads) {
  GaussianNoise noise(0.1);
  noise.set_name("gaussian_noise");
  EXPECT_EQ(noise.get_config(), R"({"dtype":"float32","name":"gaussian_noise","seed":null,"stddev":0.1,"trainable":true})");
  SpatialDropout2D drop(0.25, {.data_format = "channels_first", .seed = 4});
  drop.set_name("spatial_dropout2d");
  EXPECT_EQ(drop.get_config(), R"({"data_format":"channels_first","dtype":"float32","name":"spatial_dropout2d",)"
                               R"("rate":0.25,"seed":4,"trainable":true})");
  testing::expect_config_round_trip(noise);
  testing::expect_config_round_trip(drop);
  // tf.keras 2 writes SpatialDropout2D with Dropout's noise_shape (null).
  EXPECT_EQ(layer_from_config("SpatialDropout2D", R"({"rate": 0.5, "noise_shape": null, "seed": null})")->class_name(),
            "SpatialDropout2D");
}

}  // namespace
}  // namespace kiln::keras
