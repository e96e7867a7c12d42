// String tensors (DType::kString) through a pipeline: slices, map, shuffle, batch (also fused
// with a stateless map), unbatch, prefetch, and save/restore of a position inside a shuffle.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kiln/data/dataset.h"
#include "kiln/data/element.h"
#include "kiln/data/iterator.h"
#include "tests/testing/expect_error.h"

namespace kiln::data {
namespace {

std::vector<std::string> words(int n) {
  std::vector<std::string> w;
  for (int i = 0; i < n; ++i) w.push_back("word " + std::to_string(i) + std::string(static_cast<size_t>(i % 5) * 10, 'x'));
  return w;
}

Dataset text(int n) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = i;
  return Dataset::from_tensor_slices(HostTensor::from_vector<std::string>({n}, words(n)),
                                     HostTensor::from_vector<int64_t>({n}, ids));
}

// Every (string, id) pair of the batches, in order.
std::vector<std::pair<std::string, int64_t>> pairs(const Dataset& ds) {
  std::vector<std::pair<std::string, int64_t>> out;
  Iterator it = ds.iterator();
  while (auto e = it.next()) {
    const auto s = (*e)[0].to_vector<std::string>();
    const auto id = (*e)[1].to_vector<int64_t>();
    for (size_t i = 0; i < s.size(); ++i) out.emplace_back(s[i], id[i]);
  }
  return out;
}

TEST(StringPipelineTest, SlicesMapShuffleBatchAndPrefetchKeepEachStringWithItsRow) {
  auto upper = [](HostTensor s, HostTensor id) {
    HostTensor out(Shape(DType::kString, {}));
    std::string v = s.data<std::string>()[0];
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    out.data<std::string>()[0] = v;
    return std::tuple{out, id};
  };
  for (bool stateless : {false, true}) {
    const Dataset ds = text(37)
                           .map(upper, {.num_parallel_calls = 2, .stateless = stateless})
                           .shuffle(16, /*seed=*/3)
                           .batch(5)
                           .prefetch(2);
    const auto got = pairs(ds);
    ASSERT_EQ(got.size(), 37u);
    std::vector<bool> seen(37, false);
    const auto w = words(37);
    bool moved = false;
    for (size_t i = 0; i < got.size(); ++i) {
      std::string want = w[static_cast<size_t>(got[i].second)];
      std::transform(want.begin(), want.end(), want.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      EXPECT_EQ(got[i].first, want);
      seen[static_cast<size_t>(got[i].second)] = true;
      moved |= got[i].second != static_cast<int64_t>(i);
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }));
    EXPECT_TRUE(moved);  // the shuffle did shuffle
  }
  Iterator it = text(7).batch(4).iterator();
  EXPECT_EQ(it.next()->at(0).shape(), Shape(DType::kString, {4}));
  EXPECT_EQ(it.next()->at(0).shape(), Shape(DType::kString, {3}));
  const auto unbatched = pairs(text(7).batch(3).unbatch());
  ASSERT_EQ(unbatched.size(), 7u);
  EXPECT_EQ(unbatched[6].first, words(7)[6]);
}

TEST(StringPipelineTest, SaveAndRestoreInsideAShuffleGiveTheSameStrings) {
  const Dataset ds = text(40).map([](Element e) { return e; }).shuffle(10, /*seed=*/9).batch(3);
  const auto all = pairs(ds);
  Iterator it = ds.iterator();
  for (int i = 0; i < 4; ++i) it.next();
  const std::vector<uint8_t> state = it.save();
  Iterator resumed = ds.iterator();
  resumed.restore(state);
  std::vector<std::pair<std::string, int64_t>> rest;
  while (auto e = resumed.next()) {
    const auto s = (*e)[0].to_vector<std::string>();
    const auto id = (*e)[1].to_vector<int64_t>();
    for (size_t i = 0; i < s.size(); ++i) rest.emplace_back(s[i], id[i]);
  }
  EXPECT_EQ(rest, (std::vector<std::pair<std::string, int64_t>>(all.begin() + 12, all.end())));
}

TEST(StringPipelineTest, AStringWhereANumberIsExpectedIsAnErrorNotACrash) {
  // A numeric map function reading a string component.
  const Dataset ds = text(4).map([](HostTensor s, HostTensor id) { return std::tuple{s.astype(DType::kF32), id}; });
  Iterator it = ds.iterator();
  // The map names itself and passes the DTypeError's message on, as a DataError.
  KILN_EXPECT_ERROR(it.next(), DataError, "[map] the function failed: [HostTensor::astype] cannot convert string[] to f32");
  // Batching strings with numbers of another shape still names the shapes.
  const Dataset mixed = Dataset::from_tensor_slices({HostTensor::from_vector<std::string>({2}, {"a", "b"})})
                            .map([](Element e) {
                              if (e[0].data<std::string>()[0] == "b") e[0] = HostTensor::scalar<float>(1);
                              return e;
                            })
                            .batch(2);
  Iterator mi = mixed.iterator();
  KILN_EXPECT_ERROR(mi.next(), DataError, "of shape f32[]");
  // A string element's text reads back with tensor_string.
  EXPECT_EQ(tensor_string(HostTensor::from_vector<std::string>({}, {"path/a.txt"})), "path/a.txt");
}

}  // namespace
}  // namespace kiln::data
