// Sources and the simple element-wise transforms of Dataset: slices, generator, zip, filter,
// take/skip/shard, repeat, cache, list_files.
#include "kiln/data/dataset.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/data/dataset_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/temp_dir.h"

namespace kiln::data {
namespace {

using testing::collect;
using testing::iota;
using testing::range;
using testing::scalar;

TEST(DatasetTest, FromTensorSlicesYieldsRowsOfEveryComponent) {
  HostTensor x = HostTensor::from_vector<float>({3, 2}, {0, 1, 2, 3, 4, 5});
  HostTensor y = HostTensor::from_vector<int32_t>({3}, {7, 8, 9});
  Iterator it = Dataset::from_tensor_slices({x, y}).iterator();
  for (int i = 0; i < 3; ++i) {
    std::optional<Element> e = it.next();
    ASSERT_TRUE(e);
    ASSERT_EQ(e->size(), 2u);
    EXPECT_EQ((*e)[0].shape(), Shape(DType::kF32, {2}));
    EXPECT_EQ((*e)[0].to_vector<float>(), (std::vector<float>{2.0f * i, 2.0f * i + 1}));
    EXPECT_EQ((*e)[1].shape(), Shape(DType::kI32, {}));
    EXPECT_EQ((*e)[1].to_vector<int32_t>()[0], 7 + i);
  }
  EXPECT_FALSE(it.next());
  EXPECT_FALSE(it.next());
}

// tf.data's spellings compile and mean the same: from_tensor_slices(x, y) (and a tuple or
// pair, as Python's (x, y)), from_tensor_slices(x), data::AUTOTUNE.
TEST(DatasetTest, AcceptsTfDatasSpellings) {
  HostTensor x = HostTensor::from_vector<float>({3, 2}, {0, 1, 2, 3, 4, 5});
  HostTensor y = HostTensor::from_vector<int32_t>({3}, {7, 8, 9});
  auto rows = [](const Dataset& d) {
    std::vector<std::vector<int64_t>> out;
    Iterator it = d.iterator();
    while (auto e = it.next()) {
      std::vector<int64_t> row;
      for (const HostTensor& c : *e)
        for (int64_t v : c.to_vector<int64_t>()) row.push_back(v);
      out.push_back(row);
    }
    return out;
  };
  const auto braced = rows(Dataset::from_tensor_slices({x, y}));
  ASSERT_EQ(braced.size(), 3u);
  EXPECT_EQ(rows(Dataset::from_tensor_slices(x, y)), braced);
  EXPECT_EQ(rows(Dataset::from_tensor_slices(std::tuple{x, y})), braced);
  EXPECT_EQ(rows(Dataset::from_tensor_slices(std::pair{x, y})), braced);
  EXPECT_EQ(rows(Dataset::from_tensor_slices(x)), rows(Dataset::from_tensor_slices({x})));
  static_assert(AUTOTUNE == kAutotune);
  EXPECT_EQ(rows(Dataset::from_tensor_slices(x, y).map([](HostTensor a, HostTensor b) { return std::pair{a, b}; },
                                                        AUTOTUNE).prefetch(AUTOTUNE)),
            braced);
  KILN_EXPECT_ERROR(Dataset::from_tensor_slices(x, HostTensor::from_vector<int32_t>({2}, {1, 2})), ShapeError,
                    "component 1 has 2 rows");
}

// tf.data's Dataset.cardinality(): counts where the recipe knows them, -1 after repeat(), -2
// where it cannot know (a filter, a generator).
TEST(DatasetTest, CardinalityFollowsTheRecipe) {
  const Dataset ten = range(10);
  EXPECT_EQ(ten.cardinality(), 10);
  EXPECT_EQ(ten.map(testing::times(2)).shuffle(4, 1).cardinality(), 10);
  EXPECT_EQ(ten.batch(3).cardinality(), 4);
  EXPECT_EQ(ten.batch(3, /*drop_remainder=*/true).cardinality(), 3);
  EXPECT_EQ(ten.map(testing::times(2), {.num_parallel_calls = 2, .stateless = true}).batch(4).cardinality(), 3);
  EXPECT_EQ(ten.repeat(3).cardinality(), 30);
  EXPECT_EQ(ten.repeat().cardinality(), kInfiniteCardinality);
  EXPECT_EQ(ten.repeat().take(7).cardinality(), 7);
  EXPECT_EQ(ten.skip(4).cardinality(), 6);
  EXPECT_EQ(ten.shard(3, 1).cardinality(), 3);  // rows 1, 4, 7
  EXPECT_EQ(ten.prefetch().cache().cardinality(), 10);
  EXPECT_EQ(Dataset::zip({ten, range(4)}).cardinality(), 4);
  EXPECT_EQ(ten.filter([](const Element&) { return true; }).cardinality(), kUnknownCardinality);
  EXPECT_EQ(ten.filter([](const Element&) { return true; }).batch(2).cardinality(), kUnknownCardinality);
}

TEST(DatasetTest, FromTensorSlicesRejectsDifferentLeadingDimensions) {
  HostTensor x = HostTensor::zeros(Shape(DType::kF32, {3, 2}));
  HostTensor y = HostTensor::zeros(Shape(DType::kF32, {4}));
  KILN_EXPECT_ERROR(Dataset::from_tensor_slices({x, y}), ShapeError, "component 1 has 4 rows");
  KILN_EXPECT_ERROR(Dataset::from_tensor_slices({HostTensor::scalar<float>(1)}), ShapeError,
                    "leading axis");
}

TEST(DatasetTest, FromGeneratorMakesAFreshGeneratorPerIterator) {
  Dataset d = Dataset::from_generator([] {
    return [i = int64_t{0}]() mutable -> std::optional<Element> {
      if (i == 4) return std::nullopt;
      return Element(HostTensor::scalar<int64_t>(i++));
    };
  });
  EXPECT_EQ(collect(d), iota(0, 4));
  EXPECT_EQ(collect(d), iota(0, 4));
}

TEST(DatasetTest, ZipConcatenatesComponentsAndEndsWithTheShortest) {
  Iterator it = Dataset::zip({range(5), range(3).map(testing::times(10))}).iterator();
  for (int64_t i = 0; i < 3; ++i) {
    std::optional<Element> e = it.next();
    ASSERT_TRUE(e);
    EXPECT_EQ(scalar(*e, 0), i);
    EXPECT_EQ(scalar(*e, 1), 10 * i);
  }
  EXPECT_FALSE(it.next());
}

TEST(DatasetTest, FilterKeepsAcceptedElements) {
  auto even = [](const Element& e) { return scalar(e) % 2 == 0; };
  EXPECT_EQ(collect(range(10).filter(even)), (std::vector<int64_t>{0, 2, 4, 6, 8}));
}

TEST(DatasetTest, TakeSkipAndShardSelectByIndex) {
  EXPECT_EQ(collect(range(10).take(3)), iota(0, 3));
  EXPECT_EQ(collect(range(10).take(-1)), iota(0, 10));
  EXPECT_EQ(collect(range(10).skip(7)), iota(7, 10));
  EXPECT_TRUE(collect(range(10).skip(-1)).empty());
  EXPECT_EQ(collect(range(10).shard(3, 1)), (std::vector<int64_t>{1, 4, 7}));
  KILN_EXPECT_ERROR(range(10).shard(3, 3), ValueError, "index=3");
}

TEST(DatasetTest, TakeEndsAnInfiniteRepeat) {
  EXPECT_EQ(collect(range(3).repeat().take(7)), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0}));
}

TEST(DatasetTest, RepeatRunsTheInputCountTimes) {
  EXPECT_EQ(collect(range(2).repeat(3)), (std::vector<int64_t>{0, 1, 0, 1, 0, 1}));
  EXPECT_TRUE(collect(range(2).repeat(0)).empty());
  // An empty input must end repeat() instead of spinning.
  EXPECT_TRUE(collect(range(2).skip(5).repeat()).empty());
}

TEST(DatasetTest, CacheServesLaterPassesFromMemory) {
  int calls = 0;
  Dataset d = range(4)
                  .map([&calls](Element e) {
                    ++calls;
                    return e;
                  })
                  .cache();
  EXPECT_EQ(collect(d), iota(0, 4));
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(collect(d.repeat(2)), (std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(calls, 4);
}

TEST(DatasetTest, ListFilesMatchesAWildcardSortedOrShuffled) {
  kiln::testing::TempDir dir;
  for (const char* name : {"b.rec", "a.rec", "c.rec", "notes.txt"}) dir.write(name, {1});
  Iterator it = Dataset::list_files(dir.file("*.rec"), /*shuffle=*/false).iterator();
  std::vector<std::string> names;
  while (auto e = it.next()) names.push_back(tensor_string((*e)[0]));
  EXPECT_EQ(names, (std::vector<std::string>{dir.file("a.rec"), dir.file("b.rec"), dir.file("c.rec")}));

  Iterator shuffled = Dataset::list_files(dir.file("*.rec"), /*shuffle=*/true, /*seed=*/3).iterator();
  std::vector<std::string> got;
  while (auto e = shuffled.next()) got.push_back(tensor_string((*e)[0]));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, names);
  KILN_EXPECT_ERROR(Dataset::list_files(dir.file("*.npy")), DataError, "no file matches");
}

TEST(DatasetTest, ElementSpillsPastFourComponents) {
  Element tuple;
  for (int64_t i = 0; i < 6; ++i) tuple.push_back(HostTensor::scalar<int64_t>(i));
  ASSERT_EQ(tuple.size(), 6u);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(scalar(tuple, static_cast<size_t>(i)), i);
  KILN_EXPECT_ERROR(tuple.at(6), ValueError, "component 6");
}

}  // namespace
}  // namespace kiln::data
