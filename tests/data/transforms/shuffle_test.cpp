// shuffle: reproducible with a seed, a true permutation, reshuffled per epoch when asked.
#include "kiln/data/transforms/shuffle.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/data/dataset_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::data {
namespace {

using testing::collect;
using testing::iota;
using testing::range;

TEST(ShuffleTest, SeededShuffleIsReproducibleAndAPermutation) {
  std::vector<int64_t> a = collect(range(1000).shuffle(100, /*seed=*/7));
  std::vector<int64_t> b = collect(range(1000).shuffle(100, /*seed=*/7));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, iota(0, 1000));
  std::sort(a.begin(), a.end());
  EXPECT_EQ(a, iota(0, 1000));
}

TEST(ShuffleTest, DifferentSeedsGiveDifferentOrders) {
  EXPECT_NE(collect(range(100).shuffle(100, 1)), collect(range(100).shuffle(100, 2)));
}

TEST(ShuffleTest, FullBufferMovesFirstElementAnywhere) {
  // With a buffer as large as the data, element 0 is not stuck near the front.
  int64_t late = 0;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    std::vector<int64_t> v = collect(range(20).shuffle(20, seed));
    late += std::find(v.begin(), v.end(), 0) - v.begin() >= 10;
  }
  EXPECT_GT(late, 10);
}

TEST(ShuffleTest, ReshufflesEachRepetitionUnlessAskedNotTo) {
  std::vector<int64_t> two = collect(range(50).shuffle(50, 3).repeat(2));
  EXPECT_NE(std::vector<int64_t>(two.begin(), two.begin() + 50),
            std::vector<int64_t>(two.begin() + 50, two.end()));
  std::vector<int64_t> fixed = collect(range(50).shuffle(50, 3, /*reshuffle_each_iteration=*/false).repeat(2));
  EXPECT_EQ(std::vector<int64_t>(fixed.begin(), fixed.begin() + 50),
            std::vector<int64_t>(fixed.begin() + 50, fixed.end()));
}

TEST(ShuffleTest, IteratorEpochReshuffles) {
  Dataset d = range(50).shuffle(50, 3);
  Iterator e0 = d.iterator(0);
  Iterator e0_again = d.iterator(0);
  Iterator e1 = d.iterator(1);
  std::vector<int64_t> a = testing::drain(e0), b = testing::drain(e0_again), c = testing::drain(e1);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(ShuffleTest, OverSlicesBuffersRowIndicesAndGivesTheElementBuffersStream) {
  // range() is from_tensor_slices, so its shuffle buffers row indices; a map in between (not
  // declared stateless) makes the shuffle buffer elements. The streams must agree, over a
  // reshuffled repeat, one element at a time and in batches, and with a buffer larger than
  // the data (the end of the input inside the first fill).
  auto elements_first = [](Dataset d) { return d.map([](Element e) { return e; }); };
  for (int64_t buffer : {1, 7, 100, 5000}) {
    EXPECT_EQ(collect(range(1000).shuffle(buffer, 5).repeat(3)),
              collect(elements_first(range(1000)).shuffle(buffer, 5).repeat(3)))
        << "buffer " << buffer;
    EXPECT_EQ(collect(range(1000).shuffle(buffer, 5).repeat(2).batch(64).unbatch()),
              collect(elements_first(range(1000)).shuffle(buffer, 5).repeat(2).batch(64).unbatch()))
        << "buffer " << buffer;
  }
}

TEST(ShuffleTest, OverSlicesMakesEveryComponentOfTheRows) {
  HostTensor x = HostTensor::from_vector<float>({6, 2}, {0, 1, 10, 11, 20, 21, 30, 31, 40, 41, 50, 51});
  HostTensor y = HostTensor::from_vector<int64_t>({6}, {0, 1, 2, 3, 4, 5});
  Iterator it = Dataset::from_tensor_slices({x, y}).shuffle(6, 2).iterator();
  std::vector<int64_t> seen;
  while (std::optional<Element> e = it.next()) {
    const int64_t row = testing::scalar(*e, 1);
    EXPECT_EQ(e->at(0).to_vector<float>(), (std::vector<float>{10.0f * row, 10.0f * row + 1}));
    seen.push_back(row);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, iota(0, 6));
}

// The stream with -1 where next() failed.
std::vector<int64_t> drain_with_errors(Iterator& it) {
  std::vector<int64_t> out;
  while (true) {
    try {
      std::optional<Element> e = it.next();
      if (!e) return out;
      out.push_back(testing::scalar(*e));
    } catch (const DataError&) {
      out.push_back(-1);
    }
  }
}

TEST(ShuffleTest, InputFailureReachesTheConsumerOnceAndLosesNoElement) {
  Dataset d = range(30)
                  .map([](Element e) -> Element {
                    if (testing::scalar(e) == 17) throw std::runtime_error("bad element");
                    return e;
                  })
                  .shuffle(5, /*seed=*/1);
  Iterator one_by_one = d.iterator();
  std::vector<int64_t> got = drain_with_errors(one_by_one);
  // A prefetch pulls from the shuffle in bulk: the same stream, the failure at the same place.
  Iterator bulk = d.prefetch(8).iterator();
  EXPECT_EQ(drain_with_errors(bulk), got);
  EXPECT_EQ(std::count(got.begin(), got.end(), -1), 1);
  std::sort(got.begin(), got.end());
  std::vector<int64_t> want = iota(-1, 30);
  want.erase(std::find(want.begin(), want.end(), 17));
  EXPECT_EQ(got, want);
}

TEST(ShuffleTest, RejectsNonPositiveBuffer) {
  KILN_EXPECT_ERROR(range(3).shuffle(0), ValueError, "buffer_size must be positive");
}

}  // namespace
}  // namespace kiln::data
