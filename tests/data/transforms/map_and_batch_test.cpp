// map_and_batch: a parallel stateless map before batch runs fused, with the batches of the
// unfused recipe (full and short, with and without drop_remainder), its own stage name, exact
// save/restore, and errors naming it.
#include "kiln/data/transforms/map_and_batch.h"

#include <gtest/gtest.h>

#include "tests/data/dataset_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::data {
namespace {

using testing::range;

// (x) -> (3x, x as f32[2] = {x, -x}): two components of different shapes and dtypes.
Element triple_and_pair(Element e) {
  const int64_t x = testing::scalar(e);
  return {HostTensor::scalar<int64_t>(3 * x),
          HostTensor::from_vector<float>({2}, {static_cast<float>(x), -static_cast<float>(x)})};
}

Dataset recipe(bool stateless, bool drop_remainder, int64_t n = 103) {
  return range(n)
      .map(triple_and_pair, {.num_parallel_calls = 2, .stateless = stateless})
      .batch(10, drop_remainder);
}

// Every batch, component by component, flattened to doubles (with the batch's row count).
std::vector<std::vector<double>> drain_batches(Iterator& it) {
  std::vector<std::vector<double>> out;
  while (std::optional<Element> b = it.next()) {
    std::vector<double> flat{static_cast<double>((*b)[0].dims()[0])};
    for (const HostTensor& c : *b)
      for (double v : c.to_vector<double>()) flat.push_back(v);
    out.push_back(std::move(flat));
  }
  return out;
}

std::vector<std::string> stage_names(const Iterator& it) {
  std::vector<std::string> names;
  for (const StageStats& s : it.stats().stages) names.push_back(s.name);
  return names;
}

TEST(MapAndBatchTest, GivesTheBatchesOfTheUnfusedRecipe) {
  for (const bool drop : {false, true}) {
    Iterator unfused = recipe(false, drop).iterator();
    Iterator fused = recipe(true, drop).iterator();
    const auto expected = drain_batches(unfused);
    ASSERT_EQ(expected.size(), drop ? 10u : 11u);
    EXPECT_EQ(expected.back()[0], drop ? 10 : 3);  // the short last batch
    EXPECT_EQ(drain_batches(fused), expected) << "drop_remainder " << drop;
    EXPECT_EQ(stage_names(unfused), (std::vector<std::string>{"tensor_slices", "map", "batch"}));
    EXPECT_EQ(stage_names(fused), (std::vector<std::string>{"tensor_slices", "map_and_batch"}));
  }
}

TEST(MapAndBatchTest, AnInlineStatelessMapIsNotFused) {
  Iterator it = range(20).map(triple_and_pair, {.stateless = true}).batch(4).iterator();
  drain_batches(it);
  EXPECT_EQ(stage_names(it), (std::vector<std::string>{"tensor_slices", "map", "batch"}));
}

TEST(MapAndBatchTest, SaveMidStreamRestoresTheRest) {
  const Dataset d = range(200)
                        .map(triple_and_pair, {.num_parallel_calls = 2, .stateless = true})
                        .shuffle(50, /*seed=*/3)
                        .repeat(2)
                        .batch(16, /*drop_remainder=*/true);
  Iterator whole = d.iterator();
  const auto expected = drain_batches(whole);
  Iterator it = d.iterator();
  std::vector<std::vector<double>> got;
  for (int i = 0; i < 7; ++i) {
    std::optional<Element> b = it.next();
    ASSERT_TRUE(b);
    std::vector<double> flat{static_cast<double>((*b)[0].dims()[0])};
    for (const HostTensor& c : *b)
      for (double v : c.to_vector<double>()) flat.push_back(v);
    got.push_back(std::move(flat));
  }
  const std::vector<uint8_t> state = it.save();
  Iterator resumed = d.iterator();
  resumed.restore(state);
  for (auto& b : drain_batches(resumed)) got.push_back(std::move(b));
  EXPECT_EQ(got, expected);
}

TEST(MapAndBatchTest, ErrorsNameTheFusedStageAndTheStreamGoesOn) {
  MapFn fails_at_7 = [](Element e) -> Element {
    if (testing::scalar(e) == 7) throw std::runtime_error("bad row 7");
    return e;
  };
  Iterator it = range(30).map(fails_at_7, {.num_parallel_calls = 2, .stateless = true}).batch(5).iterator();
  EXPECT_EQ(it.next()->at(0).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  KILN_EXPECT_ERROR(it.next(), DataError, "[map_and_batch] the function failed: bad row 7");
  EXPECT_EQ(it.next()->at(0).to_vector<int64_t>(), (std::vector<int64_t>{10, 11, 12, 13, 14}));

  MapFn ragged = [](Element e) -> Element {
    return HostTensor::zeros(Shape(DType::kF32, {1 + testing::scalar(e) % 2}));
  };
  Iterator bad = range(4).map(ragged, {.num_parallel_calls = 2, .stateless = true}).batch(4).iterator();
  KILN_EXPECT_ERROR(bad.next(), DataError, "element 1 of a batch has component 0 of shape f32[2]");
}

}  // namespace
}  // namespace kiln::data
