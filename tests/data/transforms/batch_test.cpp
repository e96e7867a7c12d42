// batch and unbatch: stacking with and without the remainder, shape checks, round trips.
#include "kiln/data/transforms/batch.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/data/dataset_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::data {
namespace {

using testing::collect;
using testing::iota;
using testing::range;

Dataset pairs(int64_t n) {
  std::vector<float> x(static_cast<size_t>(n * 2));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  return Dataset::zip({Dataset::from_tensor_slices({HostTensor::from_vector<float>({n, 2}, x)}), range(n)});
}

TEST(BatchTest, StacksElementsAndKeepsTheRemainder) {
  Iterator it = pairs(5).batch(2).iterator();
  std::vector<Shape> shapes;
  std::vector<float> xs;
  while (auto b = it.next()) {
    shapes.push_back((*b)[0].shape());
    EXPECT_EQ((*b)[1].dims()[0], (*b)[0].dims()[0]);
    for (float v : (*b)[0].to_vector<float>()) xs.push_back(v);
  }
  EXPECT_EQ(shapes, (std::vector<Shape>{Shape(DType::kF32, {2, 2}), Shape(DType::kF32, {2, 2}),
                                         Shape(DType::kF32, {1, 2})}));
  EXPECT_EQ(xs, (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(BatchTest, DropRemainderDropsTheShortBatch) {
  Iterator it = range(5).batch(2, /*drop_remainder=*/true).iterator();
  EXPECT_EQ(it.next()->at(0).to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(it.next()->at(0).to_vector<int64_t>(), (std::vector<int64_t>{2, 3}));
  EXPECT_FALSE(it.next());
  EXPECT_FALSE(it.next());
}

TEST(BatchTest, RejectsElementsOfDifferentShapes) {
  Dataset ragged = Dataset::from_generator([] {
    return [i = 0]() mutable -> std::optional<Element> {
      return Element(HostTensor::zeros(Shape(DType::kF32, {++i})));
    };
  });
  Iterator it = ragged.batch(3).iterator();
  KILN_EXPECT_ERROR(it.next(), DataError, "element 1 of a batch has component 0 of shape f32[2]");
}

TEST(BatchTest, UnbatchInvertsBatch) {
  EXPECT_EQ(collect(range(7).batch(3).unbatch()), iota(0, 7));
  Iterator it = pairs(3).batch(2).unbatch().iterator();
  std::optional<Element> e = it.next();
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)[0].shape(), Shape(DType::kF32, {2}));
  EXPECT_EQ((*e)[1].shape(), Shape(DType::kI64, {}));
}

TEST(BatchTest, EveryRowOfAReusedBatchBufferIsOverwritten) {
  // Batch buffers come uninitialized and are recycled once dropped: each batch must still
  // hold exactly its own rows, whether its buffer is fresh or reused.
  Iterator it = pairs(9).repeat(3).batch(4).iterator();
  std::vector<float> xs;
  std::vector<std::set<const void*>> buffers;
  int64_t rows = 0;
  while (auto b = it.next()) {
    buffers.push_back({(*b)[0].raw_data(), (*b)[1].raw_data()});
    rows += (*b)[0].dims()[0];
    for (float v : (*b)[0].to_vector<float>()) xs.push_back(v);
  }  // each batch is dropped before the next, so its buffer can come back
  EXPECT_EQ(rows, 27);
  std::vector<float> expected;
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 18; ++i) expected.push_back(static_cast<float>(i));
  EXPECT_EQ(xs, expected);
  EXPECT_EQ(buffers[1], buffers[0]);  // the dropped buffers were reused
}

TEST(BatchTest, HeldBatchesKeepTheirContents) {
  Iterator it = range(12).batch(3).iterator();
  std::vector<Element> held;
  while (auto b = it.next()) held.push_back(std::move(*b));
  ASSERT_EQ(held.size(), 4u);
  for (size_t i = 0; i < held.size(); ++i) {
    EXPECT_EQ(held[i][0].to_vector<int64_t>(), iota(3 * static_cast<int64_t>(i), 3 * static_cast<int64_t>(i) + 3));
    for (size_t j = 0; j < i; ++j) EXPECT_FALSE(held[i][0].shares_storage_with(held[j][0]));
  }
}

TEST(BatchTest, RejectsNonPositiveBatchSize) {
  KILN_EXPECT_ERROR(range(3).batch(0), ValueError, "batch_size must be positive");
}

}  // namespace
}  // namespace kiln::data
