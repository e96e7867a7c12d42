// prefetch: order kept, a bounded queue, autotuned size, and errors from upstream.
#include "kiln/data/transforms/prefetch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iterator>
#include <thread>

#include "tests/data/dataset_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::data {
namespace {

using testing::collect;
using testing::iota;
using testing::range;

TEST(PrefetchTest, KeepsOrder) {
  EXPECT_EQ(collect(range(500).prefetch(3)), iota(0, 500));
  EXPECT_EQ(collect(range(500).prefetch(kAutotune)), iota(0, 500));
  EXPECT_TRUE(collect(range(0).prefetch(2)).empty());
}

TEST(PrefetchTest, ProducesNoMoreThanItsBufferAhead) {
  std::atomic<int> produced{0};
  Dataset d = range(1000)
                  .map([&produced](Element e) {
                    ++produced;
                    return e;
                  })
                  .prefetch(5);
  Iterator it = d.iterator();
  ASSERT_TRUE(it.next());
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  // One taken plus at most 5 queued (and one being pulled).
  EXPECT_LE(produced.load(), 7);
  EXPECT_GE(produced.load(), 2);
}

// Threads of this process, from /proc (Linux).
int thread_count() {
  const std::filesystem::directory_iterator tasks("/proc/self/task");
  return static_cast<int>(std::distance(begin(tasks), end(tasks)));
}

TEST(PrefetchTest, OverAStageWithWorkersLendsItsBufferInsteadOfRunningAThread) {
  std::atomic<int> produced{0};
  Dataset d = range(1000)
                  .map(
                      [&produced](Element e) {
                        ++produced;
                        return e;
                      },
                      {.num_parallel_calls = 1, .stateless = true})
                  .batch(10, /*drop_remainder=*/true)  // fused: map_and_batch, 2 batches ahead
                  .prefetch(5);
  const int threads_before = thread_count();
  Iterator it = d.iterator();
  ASSERT_TRUE(it.next());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(thread_count() - threads_before, 1) << "the map's one worker, and no prefetch thread";
  // 2 + 5 batches ahead of the consumer (counting the one it took), at most one more being
  // mapped: the prefetch's 5 batches still run ahead, in the map's buffer (alone it holds 2).
  EXPECT_GE(produced.load(), 70);
  EXPECT_LE(produced.load(), 90);
  const PipelineStats stats = it.stats();
  ASSERT_EQ(stats.stages.size(), 3u) << stats.to_string();
  EXPECT_EQ(stats.stages[1].name, "map_and_batch");
  EXPECT_EQ(stats.stages[1].buffer_size, 7);
  EXPECT_EQ(stats.stages[2].name, "prefetch");
  EXPECT_EQ(stats.stages[2].parallelism, 0);
  EXPECT_EQ(stats.stages[2].buffer_size, 5);
  EXPECT_TRUE(stats.stages[2].buffer_lent_to_input);
  EXPECT_NE(stats.to_string().find("(lent to its input)"), std::string::npos);
  EXPECT_EQ(testing::drain(it).size(), 99u) << "the remaining batches";
}

TEST(PrefetchTest, OverAnInlineStageRunsItsOwnThread) {
  Dataset d = range(1000).map(testing::times(2)).prefetch(3);
  const int threads_before = thread_count();
  Iterator it = d.iterator();
  ASSERT_TRUE(it.next());
  EXPECT_EQ(thread_count() - threads_before, 1);
  const PipelineStats stats = it.stats();
  EXPECT_EQ(stats.stages.back().parallelism, 1);
  EXPECT_FALSE(stats.stages.back().buffer_lent_to_input);
}

TEST(PrefetchTest, UpstreamDataErrorPassesUnchanged) {
  Iterator it = range(4).batch(2).unbatch().map([](Element e) -> Element {
    if (testing::scalar(e) == 2) throw DataError("[reader] file x: bad record");
    return e;
  }).prefetch(2).iterator();
  it.next();
  it.next();
  KILN_EXPECT_ERROR(it.next(), DataError, "[map] the function failed: [reader] file x: bad record");
}

TEST(PrefetchTest, RejectsBadBufferSize) {
  KILN_EXPECT_ERROR(range(3).prefetch(0), ValueError, "buffer_size must be positive");
}

}  // namespace
}  // namespace kiln::data
