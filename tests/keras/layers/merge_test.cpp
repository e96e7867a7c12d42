// The merge layers: Multiply, Subtract, Average, Maximum, Minimum and Dot (plain and
// normalized) by hand, f64 gradients through each input, errors naming the layer, configs,
// and a saved functional model joining branches with each.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/keras/layers/layer_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/finite_difference.h"

namespace kiln::keras {
namespace {

using kiln::testing::random_f64;

Tensor t(Dims dims, std::vector<float> v) { return Tensor::from_vector<float>(std::move(dims), std::move(v)); }

TEST(MergeTest, ElementwiseMergesCombineTheirInputs) {
  const Tensor a = t({1, 3}, {1, -2, 3}), b = t({1, 3}, {4, 5, -6}), c = t({1, 3}, {2, 2, 2});
  EXPECT_EQ(Multiply()({a, b, c}).to_vector<float>(), (std::vector<float>{8, -20, -36}));
  EXPECT_EQ(Subtract()({a, b}).to_vector<float>(), (std::vector<float>{-3, -7, 9}));
  const std::vector<float> avg = Average()({a, b, c}).to_vector<float>();
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(avg[i], (std::vector<float>{7.f / 3, 5.f / 3, -1.f / 3})[i], 1e-6) << i;
  EXPECT_EQ(Maximum()({a, b, c}).to_vector<float>(), (std::vector<float>{4, 5, 3}));
  EXPECT_EQ(Minimum()({a, b, c}).to_vector<float>(), (std::vector<float>{1, -2, -6}));
  Subtract three({.name = "sub"});
  KILN_EXPECT_ERROR(three({a, b, c}), ValueError, "[sub] Subtract expects exactly 2 inputs, received 3");
  Multiply mismatched({.name = "mul"});
  KILN_EXPECT_ERROR(mismatched({a, t({1, 2}, {1, 2})}), ShapeError, "[mul] Multiply expects inputs of one shape");
  Average one({.name = "avg"});
  KILN_EXPECT_ERROR(one(a), ValueError, "[avg] Average expects a list of at least 2 inputs, received 1");
}

// Keras broadcasts dims of 1 (a squeeze-and-excite block scales (h, w, c) by (1, 1, c)).
TEST(MergeTest, DimsOfOneBroadcastAsKerasDoes) {
  const Tensor x = t({1, 2, 2}, {1, 2, 3, 4}), scale = t({1, 1, 2}, {10, -1});
  Multiply mul;
  EXPECT_EQ(mul({x, scale}).to_vector<float>(), (std::vector<float>{10, -2, 30, -4}));
  EXPECT_EQ(mul.compute_output_shape_multi({{1, 2}, {2, 2}}), (Dims{2, 2}));
  EXPECT_EQ(Add()({scale, x}).to_vector<float>(), (std::vector<float>{11, 1, 13, 3}));
  KILN_EXPECT_ERROR(mul.compute_output_shape_multi({{2, 2}, {3, 2}}), ShapeError, "received [2,2], [3,2]");
}

TEST(DotTest, ContractsTheChosenAxesPerExample) {
  // (2, 3) . (2, 3) along axis 1: one dot product per example, kept as (batch, 1).
  Tensor y = Dot(1)({t({2, 3}, {1, 2, 3, 4, 5, 6}), t({2, 3}, {1, 0, -1, 2, 2, 2})});
  EXPECT_EQ(y.dims(), (Dims{2, 1}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{-2, 30}));
  // (1, 2, 3) and (1, 4, 3) along axes (2, 2): (1, 2, 4), a batched x @ y^T.
  Dot batched(Dims{2, 2});
  const Tensor x3 = Tensor(testing::ramp({1, 2, 3})), y3 = Tensor(testing::ramp({1, 4, 3}));
  EXPECT_EQ(batched({x3, y3}).dims(), (Dims{1, 2, 4}));
  EXPECT_EQ(batched({x3, y3}).to_vector<float>(), (std::vector<float>{14, 32, 50, 68, 32, 77, 122, 167}));
  // normalize: the cosine of (3, 4) and (4, 3) is 24 / 25.
  EXPECT_NEAR(Dot(-1, {.normalize = true})({t({1, 2}, {3, 4}), t({1, 2}, {4, 3})}).to_vector<float>()[0], 0.96, 1e-6);
  Dot bad(1, {.name = "dot"});
  KILN_EXPECT_ERROR(bad({t({1, 2}, {1, 2}), t({1, 3}, {1, 2, 3})}), ShapeError, "[dot] Dot(axes=[1,1]) contracts dims");
  KILN_EXPECT_ERROR(Dot(0), ValueError, "neither the batch axis 0");
}

TEST(MergeTest, GradientsMatchF64FiniteDifferences) {
  const std::vector<HostTensor> inputs = {random_f64({2, 3, 4}, 1), random_f64({2, 3, 4}, 2), random_f64({2, 3, 4}, 3)};
  std::vector<LayerHandle> layers = {Multiply({.dtype = "float64"}), Average({.dtype = "float64"}),
                                     Maximum({.dtype = "float64"}), Minimum({.dtype = "float64"})};
  for (LayerHandle& l : layers) {
    auto f = [&](const std::vector<Tensor>& in) { return (*l)(in); };
    EXPECT_TRUE(kiln::testing::check_gradients(f, inputs, testing::f64_grad_options())) << l->class_name();
  }
  Subtract sub({.dtype = "float64"});
  auto f_sub = [&](const std::vector<Tensor>& in) { return sub(in); };
  EXPECT_TRUE(kiln::testing::check_gradients(f_sub, {inputs[0], inputs[1]}, testing::f64_grad_options()));
  for (bool normalize : {false, true}) {
    Dot dot(Dims{1, 2}, {.normalize = normalize, .dtype = "float64"});
    auto f_dot = [&](const std::vector<Tensor>& in) { return dot(in); };
    EXPECT_TRUE(kiln::testing::check_gradients(f_dot, {random_f64({2, 3, 4}, 4), random_f64({2, 5, 3}, 5)},
                                               testing::f64_grad_options()))
        << "normalize=" << normalize;
  }
}

TEST(MergeTest, ConfigsRoundTripAndAFunctionalModelSavesAndLoads) {
  Dot dot(Dims{1, 2}, {.normalize = true});
  dot.set_name("dot");
  EXPECT_EQ(dot.get_config(), R"({"axes":[1,2],"dtype":"float32","name":"dot","normalize":true,"trainable":true})");
  for (const LayerHandle& l : std::vector<LayerHandle>{Multiply(), Subtract(), Average(), Maximum(), Minimum(), dot, Dot(1)})
    testing::expect_config_round_trip(*l);
  EXPECT_EQ(layer_from_config("Dot", R"({"axes": -1})")->compute_output_shape_multi({{3}, {3}}), (Dims{1}));
}

}  // namespace
}  // namespace kiln::keras
