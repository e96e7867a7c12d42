// Keras's numeric preprocessing layers: Normalization (adapt over an array and a Dataset in
// any batching, fixed statistics, invert, saved weights), Discretization and CategoryEncoding
// by hand, Hashing's FarmHash against Keras's documented bins, and their configs.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/keras/layers/category_encoding.h"
#include "kiln/keras/layers/hashing.h"
#include "kiln/keras/layers/normalization.h"
#include "tests/keras/layers/layer_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using kiln::testing::random_f64;

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

TEST(NormalizationTest, AdaptLearnsMeanAndVarianceOfTheKeptAxis) {
  const HostTensor x = HostTensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 9});
  Normalization norm;
  norm.adapt(x);
  // Column means 3 and 5; population variances 8/3 and 26/3.
  const std::vector<float> y = values(norm(Tensor(x)));
  const double s0 = std::sqrt(8.0 / 3), s1 = std::sqrt(26.0 / 3);
  const std::vector<double> want = {-2 / s0, -3 / s1, 0, -1 / s1, 2 / s0, 4 / s1};
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(y[i], want[i], 1e-6) << i;
  // A Dataset in batches of 2 gives the same statistics.
  Normalization again;
  again.adapt(data::Dataset::from_tensor_slices({x}).batch(2));
  EXPECT_EQ(values(again(Tensor(x))), y);
  EXPECT_EQ(again.weights()[0].read().to_vector<float>(), (std::vector<float>{3, 5}));
  // Adapting a layer after it joined a model adapts the model's layer (Keras's usual order).
  Normalization later;
  Sequential model({InputLayer({.shape = {2}}), later});
  later.adapt(x);
  EXPECT_EQ(model.predict(x).to_vector<float>(), y);
  // axis None: one mean and variance; a constant input divides by epsilon, not zero.
  Normalization all({.axis = std::nullopt});
  all.adapt(x);
  EXPECT_EQ(all.weights()[0].read().dims(), Dims{});
  Normalization constant_input;
  constant_input.adapt(HostTensor::from_vector<float>({2, 1}, {4, 4}));
  EXPECT_EQ(values(constant_input(Tensor::from_vector<float>({1, 1}, {4}))), (std::vector<float>{0}));
}

TEST(NormalizationTest, FixedStatisticsAndInvert) {
  Normalization fixed({.mean = std::vector<double>{1, 2}, .variance = std::vector<double>{4, 16}});
  const Tensor x = Tensor::from_vector<float>({1, 2}, {5, 10});
  EXPECT_EQ(values(fixed(x)), (std::vector<float>{2, 2}));
  EXPECT_TRUE(fixed.weights().empty());
  Normalization inverse({.mean = std::vector<double>{1}, .variance = std::vector<double>{4}, .invert = true});
  EXPECT_EQ(values(inverse(x)), (std::vector<float>{11, 21}));
  KILN_EXPECT_ERROR(fixed.adapt(HostTensor::from_vector<float>({1, 2}, {1, 2})), ValueError, "cannot adapt");
  KILN_EXPECT_ERROR(Normalization({.mean = std::vector<double>{1}}), ValueError, "both mean and variance");
  // Per-channel statistics of images (axis -1 of [batch, h, w, c]).
  Normalization images;
  images.adapt(random_f64({4, 3, 3, 2}, 1).astype(DType::kF32));
  EXPECT_EQ(images.weights()[1].read().dims(), (Dims{2}));
}

TEST(NormalizationTest, GradientIsOneOverTheStddev) {
  Normalization n({.mean = std::vector<double>{1, -1, 0}, .variance = std::vector<double>{4, 0.25, 9}, .dtype = "float64"});
  EXPECT_TRUE(testing::check_layer_gradients(n, random_f64({2, 3}, 2), false, testing::f64_grad_options()));
}

TEST(NormalizationTest, ConfigsAndSavedWeights) {
  Normalization n({.axis = std::vector<int>{-1}, .invert = false});
  n.set_name("normalization");
  EXPECT_EQ(n.get_config(), R"({"axis":[-1],"dtype":"float32","invert":false,"mean":null,"name":"normalization",)"
                            R"("trainable":true,"variance":null})");
  testing::expect_config_round_trip(n);
  testing::expect_config_round_trip(Normalization({.mean = std::vector<double>{1, 2}, .variance = std::vector<double>{3, 4}}));
  // Keras 3 writes the axis as a list, tf.keras 2 too; nested mean lists are flattened.
  LayerHandle k = layer_from_config("Normalization", R"({"name": "n", "trainable": true, "dtype": "float32",
      "axis": [-1], "mean": [[1.0, 2.0]], "variance": [[4.0, 16.0]], "invert": false})");
  EXPECT_EQ(values((*k)(Tensor::from_vector<float>({1, 2}, {5, 10}))), (std::vector<float>{2, 2}));
}

TEST(DiscretizationTest, BucketsByBoundariesAndEncodes) {
  Discretization d({.bin_boundaries = std::vector<double>{0, 1, 2}});
  const Tensor x = Tensor::from_vector<float>({5, 1}, {-1, 0, 0.5, 1, 2.5});
  const Tensor ids = d(x);
  EXPECT_EQ(ids.dtype(), DType::kI64);
  EXPECT_EQ(ids.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 2, 3}));
  Discretization hot({.bin_boundaries = std::vector<double>{0.5}, .output_mode = "one_hot"});
  EXPECT_EQ(values(hot(Tensor::from_vector<float>({2, 1}, {0, 1}))), (std::vector<float>{1, 0, 0, 1}));
  d.set_name("discretization");
  EXPECT_EQ(d.get_config(), R"({"bin_boundaries":[0.0,1.0,2.0],"dtype":"int64","epsilon":0.01,)"
                            R"("name":"discretization","num_bins":null,"output_mode":"int","sparse":false,)"
                            R"("trainable":true})");
  testing::expect_config_round_trip(d);
  KILN_EXPECT_ERROR(Discretization(DiscretizationOptions{}), ValueError, "pass bin_boundaries, or num_bins");
  // Keras 3's config of an adapted layer (its dtype policy names int64).
  LayerHandle k = layer_from_config("Discretization", R"({"name": "d", "trainable": true, "dtype": {"module":
      "keras", "class_name": "DTypePolicy", "config": {"name": "int64"}, "registered_name": null},
      "bin_boundaries": [0.5], "num_bins": 2, "epsilon": 0.01, "output_mode": "int", "sparse": false})");
  EXPECT_EQ((*k)(Tensor::from_vector<float>({2, 1}, {0, 1})).to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
}

// Keras 3's adapt on 1..100, num_bins 4, epsilon 0.01: summarize keeps values[1::1] (2..100,
// weight 1 each: its start is int(100 * 0.01)); get_bin_boundaries interpolates the cumulative
// fractions 0.25, 0.5, 0.75 at positions 24.75, 49.5, 74.25 of 99: 25.75, 50.5, 75.25.
TEST(DiscretizationTest, AdaptFollowsKeras3sQuantileSummary) {
  std::vector<float> v(100);
  for (int i = 0; i < 100; ++i) v[i] = static_cast<float>(100 - i);  // any order
  const HostTensor data = HostTensor::from_vector<float>({100, 1}, v);
  Discretization d({.num_bins = 4});
  KILN_EXPECT_ERROR(d(Tensor(data)), ValueError, "call adapt() first");
  d.adapt(data);
  EXPECT_EQ(*d.bin_boundaries(), (std::vector<double>{25.75, 50.5, 75.25}));
  EXPECT_EQ(d(Tensor::from_vector<float>({3, 1}, {25, 26, 100})).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 3}));
  // In batches the merged summary gives the same boundaries here (each batch's summary holds
  // all its values: 25 * 0.01 < 1).
  Discretization batched({.num_bins = 4});
  batched.adapt(data::Dataset::from_tensor_slices({data}).batch(25));
  ASSERT_TRUE(batched.bin_boundaries());
  EXPECT_EQ(batched.bin_boundaries()->size(), 3u);
  // The adapted boundaries travel in the config, as Keras's do.
  testing::expect_config_round_trip(d);
  KILN_EXPECT_ERROR(Discretization({.bin_boundaries = std::vector<double>{1}}).adapt(data), ValueError, "pass num_bins");
}

TEST(CategoryEncodingTest, MultiHotCountAndOneHot) {
  const Tensor ids = Tensor::from_vector<int32_t>({2, 2}, {0, 1, 2, 2});
  EXPECT_EQ(values(CategoryEncoding(4)(ids)), (std::vector<float>{1, 1, 0, 0, 0, 0, 1, 0}));
  EXPECT_EQ(values(CategoryEncoding(4, {.output_mode = "count"})(ids)), (std::vector<float>{1, 1, 0, 0, 0, 0, 2, 0}));
  CategoryEncoding one_hot(4, {.output_mode = "one_hot"});
  EXPECT_EQ(values(one_hot(Tensor::from_vector<int32_t>({2}, {1, 3}))), (std::vector<float>{0, 1, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(one_hot.compute_output_shape({3}), (Dims{3, 4}));
  EXPECT_EQ(one_hot.compute_output_shape({1}), (Dims{4}));
  one_hot.set_name("category_encoding");
  EXPECT_EQ(one_hot.get_config(), R"({"dtype":"float32","name":"category_encoding","num_tokens":4,)"
                                  R"("output_mode":"one_hot","sparse":false,"trainable":true})");
  testing::expect_config_round_trip(one_hot);
  KILN_EXPECT_ERROR(CategoryEncoding(4, {.sparse = true}), ValueError, "sparse");
}

// Keras's Hashing docstring: Hashing(num_bins=3) sends A, B, C, D, E to 1, 0, 1, 1, 2, and
// Hashing(num_bins=3, mask_value='') sends A, B, '', C, D to 1, 1, 0, 2, 2 (FarmHash into 2
// bins, plus one).
TEST(HashingTest, FarmHashMatchesKerasDocumentedBins) {
  auto bin = [](const std::string& s, uint64_t bins) { return internal::fingerprint64(s.data(), s.size()) % bins; };
  EXPECT_EQ((std::vector<uint64_t>{bin("A", 3), bin("B", 3), bin("C", 3), bin("D", 3), bin("E", 3)}),
            (std::vector<uint64_t>{1, 0, 1, 1, 2}));
  EXPECT_EQ((std::vector<uint64_t>{bin("A", 2), bin("B", 2), bin("C", 2), bin("D", 2)}),
            (std::vector<uint64_t>{0, 0, 1, 1}));
  // Integers hash their decimal text, as tf.as_string gives it; the mask takes bin 0.
  Hashing h(3, {.mask_value = 7});
  const HostTensor ids = h.hash(HostTensor::from_vector<int64_t>({3}, {7, 12, -4}));
  const auto v = ids.to_vector<int64_t>();
  EXPECT_EQ(v[0], 0);
  EXPECT_EQ(static_cast<uint64_t>(v[1]), bin("12", 2) + 1);
  EXPECT_EQ(static_cast<uint64_t>(v[2]), bin("-4", 2) + 1);
  // Concrete tensors hash eagerly; a traced call says where to hash instead.
  EXPECT_EQ(h(Tensor::from_vector<int64_t>({3, 1}, {7, 12, -4})).to_vector<int64_t>(), v);
  Sequential model({InputLayer({.shape = {1}}), Hashing(3)});
  KILN_EXPECT_ERROR(model.predict(HostTensor::from_vector<int64_t>({1, 1}, {5})), CompileError, "runs on the host");
  KILN_EXPECT_ERROR(Hashing(3, {.salt = 1}), ValueError, "SipHash");
  Hashing named(4);
  named.set_name("hashing");
  EXPECT_EQ(named.get_config(), R"({"dtype":"int64","mask_value":null,"name":"hashing","num_bins":4,)"
                                R"("output_mode":"int","salt":null,"sparse":false,"trainable":true})");
  testing::expect_config_round_trip(named);
}

}  // namespace
}  // namespace kiln::keras
