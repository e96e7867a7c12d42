// Iterator: save/restore reproduces the rest of the stream exactly through every stage
// (shuffle RNG and buffer, parallel map and prefetch buffers, repeat, interleave, cache), and
// stats name the slowest stage.
#include "kiln/data/iterator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "kiln/data/dataset.h"
#include "tests/data/dataset_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::data {
namespace {

using testing::range;

// Every value of component 0 of the next `n` elements, flattened (works for batches too).
std::vector<int64_t> take_values(Iterator& it, int n) {
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i) {
    std::optional<Element> e = it.next();
    if (!e) break;
    for (int64_t v : e->at(0).to_vector<int64_t>()) out.push_back(v);
    out.push_back(-1);  // element boundary
  }
  return out;
}

// Saves after `before` elements and checks that a restored iterator continues exactly like the
// uninterrupted one, and like an iterator that never saved.
void expect_resumes_exactly(const Dataset& d, int before, int after) {
  Iterator reference = d.iterator();
  take_values(reference, before);
  const std::vector<int64_t> expected = take_values(reference, after);

  Iterator it = d.iterator();
  take_values(it, before);
  const std::vector<uint8_t> state = it.save();
  EXPECT_EQ(take_values(it, after), expected) << "saving disturbed the stream";

  Iterator resumed = d.iterator();
  resumed.restore(state);
  EXPECT_EQ(take_values(resumed, after), expected);
}

TEST(IteratorTest, RestoreContinuesSimpleStages) {
  expect_resumes_exactly(range(100).skip(3).take(90).filter([](const Element& e) {
    return testing::scalar(e) % 3 != 0;
  }), 10, 40);
  expect_resumes_exactly(range(10).repeat(5), 23, 20);
  expect_resumes_exactly(Dataset::zip({range(50), range(60)}).shard(2, 1), 5, 30);
  expect_resumes_exactly(range(10).batch(4).unbatch(), 5, 10);
}

TEST(IteratorTest, RestoreContinuesThroughShuffleParallelMapAndPrefetch) {
  Dataset d = range(1000)
                  .map(testing::times(2), 3)
                  .shuffle(64, /*seed=*/11)
                  .repeat()
                  .batch(8, /*drop_remainder=*/true)
                  .prefetch(4);
  expect_resumes_exactly(d, 0, 5);
  expect_resumes_exactly(d, 37, 100);
  expect_resumes_exactly(d, 130, 50);  // past the first epoch: reshuffled order
}

TEST(IteratorTest, RestoreContinuesThroughAShuffleOfRowIndices) {
  // Over from_tensor_slices the shuffle buffers row indices (shuffle.cpp); its state is those.
  Dataset d = range(300).shuffle(64, /*seed=*/5).repeat(3);
  expect_resumes_exactly(d, 0, 10);
  expect_resumes_exactly(d, 100, 150);
  expect_resumes_exactly(d, 280, 200);   // the buffer drains at the end of an epoch
  expect_resumes_exactly(d, 330, 300);   // inside the second, reshuffled epoch
  expect_resumes_exactly(range(40).shuffle(1000, 9), 10, 30);  // a buffer larger than the data
}

TEST(IteratorTest, ReassigningARunningIteratorJoinsItsWorkersBeforeDroppingItsStats) {
  // fit reassigns its iterator each epoch and on resume while the old one's workers are
  // mid-stream, counting into the old stats: they must stop before those stats go (under
  // ASan or TSan a wrong order fails here; without them it corrupted the heap at random).
  Dataset d = range(100000).map(testing::times(2), 2).prefetch(8);
  Iterator it = d.iterator();
  for (int round = 0; round < 20; ++round) {
    ASSERT_TRUE(it.next());
    it = d.iterator();
  }
  ASSERT_TRUE(it.next());
  EXPECT_EQ(it.stats().consumer_elements, 1);
}

TEST(IteratorTest, RestoreContinuesWithElementsBufferedInMapAndPrefetch) {
  // A slow consumer lets the workers fill every buffer before the save.
  Dataset d = range(200).map(testing::times(3), 4).prefetch(16).map(testing::times(1), 2).prefetch(8);
  Iterator it = d.iterator();
  for (int i = 0; i < 7; ++i) it.next();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::vector<uint8_t> state = it.save();
  Iterator resumed = d.iterator();
  resumed.restore(state);
  std::vector<int64_t> rest = testing::drain(resumed);
  std::vector<int64_t> expected;
  for (int64_t x = 7; x < 200; ++x) expected.push_back(3 * x);
  EXPECT_EQ(rest, expected);
}

TEST(IteratorTest, RestoreContinuesThroughCacheAndGenerator) {
  Dataset gen = Dataset::from_generator([] {
    return [i = int64_t{0}]() mutable -> std::optional<Element> {
      if (i == 30) return std::nullopt;
      return Element(HostTensor::scalar<int64_t>(i++));
    };
  });
  expect_resumes_exactly(gen.cache().repeat(3), 12, 40);
  expect_resumes_exactly(gen.cache().repeat(3), 45, 40);
}

TEST(IteratorTest, RestoreRejectsStateOfAnotherRecipe) {
  Iterator a = range(10).batch(2).iterator();
  a.next();
  std::vector<uint8_t> state = a.save();
  Iterator b = range(10).map(testing::times(1)).iterator();
  KILN_EXPECT_ERROR(b.restore(state), DataError, "belongs to stage 'batch'");
  std::vector<uint8_t> cut(state.begin(), state.begin() + static_cast<long>(state.size() / 2));
  Iterator c = range(10).batch(2).iterator();
  KILN_EXPECT_ERROR(c.restore(cut), DataError, "truncated at offset");
  KILN_EXPECT_ERROR(c.restore(std::vector<uint8_t>{1, 2, 3}), DataError, "truncated");
}

TEST(IteratorTest, RestoreRejectsAnotherEpoch) {
  Dataset d = range(10).shuffle(10, 1);
  Iterator a = d.iterator(/*epoch=*/2);
  std::vector<uint8_t> state = a.save();
  Iterator b = d.iterator(/*epoch=*/3);
  KILN_EXPECT_ERROR(b.restore(state), DataError, "saved at epoch 2");
}

TEST(IteratorTest, StatsNameADeliberatelySlowMap) {
  Dataset d = range(40)
                  .map([](Element e) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(2));
                    return e;
                  })
                  .map(testing::times(2))
                  .batch(4)
                  .prefetch(2);
  Iterator it = d.iterator();
  while (it.next()) {
  }
  PipelineStats stats = it.stats();
  const StageStats* slowest = stats.slowest_stage();
  ASSERT_NE(slowest, nullptr) << stats.to_string();
  EXPECT_EQ(slowest->name, "map") << stats.to_string();
  EXPECT_GT(slowest->busy_seconds, 0.04) << stats.to_string();
  EXPECT_EQ(stats.consumer_elements, 10);
  EXPECT_GT(stats.consumer_wait_seconds, 0.0);
  ASSERT_EQ(stats.stages.size(), 5u);
  EXPECT_EQ(stats.stages[0].name, "tensor_slices");
  EXPECT_EQ(stats.stages[0].elements, 40);
  EXPECT_EQ(stats.stages[2].name, "map_2");
  EXPECT_EQ(stats.stages[4].name, "prefetch");
  EXPECT_EQ(stats.stages[4].buffer_size, 2);
  EXPECT_NE(stats.to_string().find("<- slowest"), std::string::npos);
}

TEST(IteratorTest, StatsNameASlowParallelMapAndReportAutotunedSizes) {
  Dataset d = range(60)
                  .map(
                      [](Element e) {
                        std::this_thread::sleep_for(std::chrono::milliseconds(2));
                        return e;
                      },
                      kAutotune)
                  .batch(6)
                  .prefetch(kAutotune);
  Iterator it = d.iterator();
  while (it.next()) {
  }
  PipelineStats stats = it.stats();
  ASSERT_NE(stats.slowest_stage(), nullptr) << stats.to_string();
  EXPECT_EQ(stats.slowest_stage()->name, "map") << stats.to_string();
  const StageStats& map = stats.stages[1];
  EXPECT_EQ(map.parallelism, available_cores());
  EXPECT_TRUE(map.autotuned);
  EXPECT_TRUE(stats.stages[3].autotuned);
  EXPECT_GE(stats.stages[3].buffer_size, 2);
}

}  // namespace
}  // namespace kiln::data
