// map: inline and parallel order, non-deterministic reordering, and errors from the function
// reaching the consumer with context, on every kind of thread.
#include "kiln/data/transforms/map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <tuple>

#include "tests/data/dataset_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::data {
namespace {

using testing::collect;
using testing::iota;
using testing::range;
using testing::scalar;

// x -> x, after a delay that makes early elements the slowest, so a parallel map that did not
// keep order would show it.
MapFn jittery() {
  return [](Element e) {
    const int64_t x = scalar(e);
    std::this_thread::sleep_for(std::chrono::microseconds((x % 7 == 0) ? 2000 : 10));
    return e;
  };
}

MapFn throw_at(int64_t bad) {
  return [bad](Element e) -> Element {
    if (scalar(e) == bad) throw std::runtime_error("boom at " + std::to_string(bad));
    return e;
  };
}

TEST(MapTest, InlineMapAppliesTheFunction) {
  EXPECT_EQ(collect(range(5).map(testing::times(3))), (std::vector<int64_t>{0, 3, 6, 9, 12}));
}

TEST(MapTest, ParallelMapKeepsOrder) {
  EXPECT_EQ(collect(range(100).map(jittery(), 4)), iota(0, 100));
  EXPECT_EQ(collect(range(1000).map(testing::times(2), kAutotune)),
            [] {
              auto v = iota(0, 1000);
              for (auto& x : v) x *= 2;
              return v;
            }());
}

TEST(MapTest, NonDeterministicMapYieldsTheSameMultiset) {
  std::vector<int64_t> got = collect(range(100).map(jittery(), 4, /*deterministic=*/false));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, iota(0, 100));
}

TEST(MapTest, InlineMapErrorNamesTheStage) {
  Iterator it = range(5).map(throw_at(2)).iterator();
  EXPECT_TRUE(it.next());
  EXPECT_TRUE(it.next());
  KILN_EXPECT_ERROR(it.next(), DataError, "[map] the function failed: boom at 2");
  EXPECT_EQ(scalar(*it.next()), 3);  // the pipeline goes on after a failed element
}

TEST(MapTest, InlineMapErrorInABulkPullKeepsTheRestOfTheStream) {
  // batch pulls 4 elements at once; the map fails on the 4th. As one at a time, the batch is
  // lost and the stream goes on after the failed element, also from a state saved right then.
  Dataset d = range(10).map(throw_at(3)).batch(4);
  Iterator it = d.iterator();
  KILN_EXPECT_ERROR(it.next(), DataError, "[map] the function failed: boom at 3");
  std::vector<uint8_t> state = it.save();
  Iterator resumed = d.iterator();
  resumed.restore(state);
  for (Iterator* r : {&it, &resumed}) {
    EXPECT_EQ(r->next()->at(0).to_vector<int64_t>(), (std::vector<int64_t>{4, 5, 6, 7}));
    EXPECT_EQ(r->next()->at(0).to_vector<int64_t>(), (std::vector<int64_t>{8, 9}));
    EXPECT_FALSE(r->next());
  }
}

TEST(MapTest, ParallelMapErrorArrivesInOrderAtTheConsumer) {
  Iterator it = range(50).map(throw_at(20), 3).iterator();
  for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(scalar(*it.next()), i);
  KILN_EXPECT_ERROR(it.next(), DataError, "[map] the function failed: boom at 20");
  EXPECT_EQ(scalar(*it.next()), 21);
}

TEST(MapTest, ErrorInsideAPrefetchThreadKeepsItsStageName) {
  Iterator it = range(50).map(throw_at(5)).prefetch(4).iterator();
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(scalar(*it.next()), i);
  KILN_EXPECT_ERROR(it.next(), DataError, "[map] the function failed: boom at 5");
}

TEST(MapTest, NonStandardExceptionsBecomeDataErrors) {
  Iterator it = range(3).map([](Element) -> Element { throw 42; }, 2).iterator();
  KILN_EXPECT_ERROR(it.next(), DataError, "not a std::exception");
}

TEST(MapTest, DestroyingAnIteratorMidStreamJoinsItsThreads) {
  std::atomic<int> calls{0};
  for (int round = 0; round < 20; ++round) {
    Dataset d = range(1000000)
                    .map(
                        [&calls](Element e) {
                          ++calls;
                          return e;
                        },
                        4)
                    .prefetch(8)
                    .map(testing::times(1), 2)
                    .prefetch(2);
    Iterator it = d.iterator();
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(it.next());
  }  // every iterator is destroyed here with its workers mid-stream
  const int after = calls.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(calls.load(), after);  // no worker survived its iterator
}

// A map promised stateless runs after the shuffle and repeat that follow it: the stream is
// the same element for element (the shuffle's picks do not depend on the values), the running
// stages show the new order, and a save mid-stream restores exactly.
TEST(MapTest, StatelessMapRunsAfterShuffleAndRepeatWithTheSameStream) {
  auto recipe = [](bool stateless) {
    return range(50)
        .map(testing::times(3), {.num_parallel_calls = 2, .stateless = stateless})
        .shuffle(20, /*seed=*/7)
        .repeat(3);
  };
  const std::vector<int64_t> as_written = collect(recipe(false));
  ASSERT_EQ(as_written.size(), 150u);
  EXPECT_EQ(collect(recipe(true)), as_written);

  Iterator it = recipe(true).iterator();
  std::vector<int64_t> head = testing::drain(it, 10);
  std::vector<std::string> order;
  for (const StageStats& s : it.stats().stages) order.push_back(s.name);
  EXPECT_EQ(order, (std::vector<std::string>{"tensor_slices", "shuffle", "repeat", "map"}));

  const std::vector<uint8_t> state = it.save();
  Iterator resumed = recipe(true).iterator();
  resumed.restore(state);
  std::vector<int64_t> rest = testing::drain(resumed);
  head.insert(head.end(), rest.begin(), rest.end());
  EXPECT_EQ(head, as_written);
}

TEST(MapTest, AStatefulMapStaysWhereItWasWritten) {
  Iterator it = range(10).map(testing::times(2), {.num_parallel_calls = 0}).shuffle(4, 1).iterator();
  testing::drain(it);
  std::vector<std::string> order;
  for (const StageStats& s : it.stats().stages) order.push_back(s.name);
  EXPECT_EQ(order, (std::vector<std::string>{"tensor_slices", "map", "shuffle"}));
}

// tf.data's `map(lambda x, y: (...))`: the components as arguments, a tuple back.
TEST(MapTest, TakesTheComponentsAsArgumentsAndReturnsATuple) {
  Dataset ds = Dataset::from_tensor_slices({HostTensor::from_vector<int64_t>({3}, {1, 2, 3}),
                                            HostTensor::from_vector<float>({3}, {0.5f, 1.5f, 2.5f})})
                   .map([](HostTensor x, HostTensor y) {
                     return std::tuple{y, HostTensor::scalar<int64_t>(10 * x.data<int64_t>()[0])};
                   });
  Iterator it = ds.iterator();
  std::vector<float> ys;
  std::vector<int64_t> xs;
  while (std::optional<Element> e = it.next()) {
    ASSERT_EQ(e->size(), 2u);
    ys.push_back((*e)[0].data<float>()[0]);
    xs.push_back((*e)[1].data<int64_t>()[0]);
  }
  EXPECT_EQ(ys, (std::vector<float>{0.5f, 1.5f, 2.5f}));
  EXPECT_EQ(xs, (std::vector<int64_t>{10, 20, 30}));
  // One argument, one tensor back, in parallel.
  EXPECT_EQ(collect(range(4).map([](HostTensor x) { return HostTensor::scalar<int64_t>(x.data<int64_t>()[0] + 1); }, 2)),
            (std::vector<int64_t>{1, 2, 3, 4}));
}

TEST(MapTest, AFunctionOfTheWrongArityIsAnErrorNamingItAndTheElement) {
  Iterator it = range(3).map([](HostTensor x, HostTensor) { return x; }, {.name = "pairs"}).iterator();
  KILN_EXPECT_ERROR(it.next(), DataError, "[map 'pairs'] the function takes 2 components as arguments, but the element (i64[]) has 1");
}

TEST(MapTest, RejectsBadParallelism) {
  KILN_EXPECT_ERROR(range(3).map(testing::times(1), -5), ValueError, "num_parallel_calls");
}

}  // namespace
}  // namespace kiln::data
