// prefetch: order kept, a bounded queue, autotuned size, and errors from upstream.
#include "kiln/data/transforms/prefetch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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
