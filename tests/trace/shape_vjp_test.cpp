// Gradient checks for the shape and index ops: broadcast, reshape, transpose, slice (strided),
// concatenate, pad (positive and negative), gather and scatter_add.
#include <gtest/gtest.h>

#include "kiln/trace/ops/shape.h"
#include "tests/testing/finite_difference.h"

namespace kiln {
namespace {

using testing::check_gradients;
using testing::random_f64;
using Xs = std::vector<Tensor>;

TEST(ShapeVjpTest, BroadcastInDimSumsNewAndStretchedDims) {
  EXPECT_TRUE(check_gradients([](const Xs& x) { return broadcast_to(x[0], {2, 3, 4}); },
                              {random_f64({3, 1}, 1)}));
  EXPECT_TRUE(check_gradients([](const Xs& x) { return broadcast_in_dim(x[0], {3, 2, 4}, {0, 2}); },
                              {random_f64({3, 4}, 2)}));
  EXPECT_TRUE(check_gradients([](const Xs& x) { return broadcast_to(x[0], {5}); },
                              {random_f64({}, 3)}));
}

TEST(ShapeVjpTest, ReshapeAndTransposeMoveGradientsBack) {
  HostTensor x = random_f64({2, 3, 4}, 4);
  EXPECT_TRUE(check_gradients([](const Xs& v) { return reshape(v[0], {4, -1}) * 2.0; }, {x}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return transpose(v[0], {2, 0, 1}); }, {x}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return transpose(v[0]) * v[1]; },
                              {x, random_f64({4, 3, 2}, 5)}));
}

TEST(ShapeVjpTest, SlicePadsTheGradientIncludingStrides) {
  HostTensor x = random_f64({5, 7}, 6);
  EXPECT_TRUE(check_gradients([](const Xs& v) { return slice(v[0], {1, 2}, {4, 6}); }, {x}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return slice(v[0], {0, 1}, {5, 7}, {2, 3}); }, {x}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return slice(v[0], {1, 0}, {4, 6}, {2, 2}); }, {x}));
}

TEST(ShapeVjpTest, ConcatenateSlicesTheGradient) {
  EXPECT_TRUE(check_gradients([](const Xs& v) { return concat({v[0], v[1], v[0]}, 1); },
                              {random_f64({2, 3}, 7), random_f64({2, 1}, 8)}));
}

TEST(ShapeVjpTest, PadSlicesTheGradientAndCropsGetZeros) {
  HostTensor x = random_f64({3, 4}, 9);
  EXPECT_TRUE(check_gradients([](const Xs& v) { return pad(v[0], {1, 0}, {2, 3}, 0.5); }, {x}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return pad(v[0], {-1, 2}, {1, -2}); }, {x}));
}

TEST(ShapeVjpTest, GatherScattersAndScatterAddGathers) {
  HostTensor table = random_f64({5, 3}, 10);
  HostTensor ids = HostTensor::from_vector<int32_t>({4}, {4, 0, 4, 2});  // repeats accumulate
  EXPECT_TRUE(check_gradients([](const Xs& v) { return take(v[0], v[1], 0); }, {table, ids}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return take(v[0], v[1], 1); },
                              {table, HostTensor::from_vector<int32_t>({2, 2}, {2, 0, 1, 1})}));
  EXPECT_TRUE(check_gradients([](const Xs& v) { return scatter_add(v[0], v[1], v[2] * v[2], 0); },
                              {table, ids, random_f64({4, 3}, 11)}));
}

}  // namespace
}  // namespace kiln
