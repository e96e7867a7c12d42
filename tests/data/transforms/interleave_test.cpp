// interleave: tf.data's cycle/block order, sequential and parallel, and restore mid-cycle.
#include "kiln/data/transforms/interleave.h"

#include <gtest/gtest.h>

#include "tests/data/dataset_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::data {
namespace {

using testing::collect;
using testing::range;
using testing::scalar;

// x -> the dataset x*10, x*10+1, ..., x*10+x (x+1 elements).
Dataset counted(const Element& x) {
  const int64_t v = scalar(x);
  return range(v + 1).map(testing::times(1)).map([v](Element e) -> Element {
    return HostTensor::scalar<int64_t>(v * 10 + scalar(e));
  });
}

// tf.data's order for inputs 1, 2, 3 with cycle_length 2 and block_length 2: an exhausted
// slot hands the cursor on, and is refilled when the cursor comes back.
const std::vector<int64_t> kExpected = {10, 11, 20, 21, 22, 30, 31, 32, 33};

TEST(InterleaveTest, FollowsCycleAndBlockOrder) {
  Dataset d = range(4).skip(1).interleave(counted, /*cycle_length=*/2, /*block_length=*/2);
  EXPECT_EQ(collect(d), kExpected);
  Dataset blocks_of_one = range(4).skip(1).interleave(counted, 2, 1);
  EXPECT_EQ(collect(blocks_of_one), (std::vector<int64_t>{10, 20, 11, 21, 22, 30, 31, 32, 33}));
}

TEST(InterleaveTest, ParallelInterleaveKeepsTheSameOrder) {
  Dataset d = range(4).skip(1).interleave(counted, 2, 2, /*num_parallel_calls=*/kAutotune);
  EXPECT_EQ(collect(d), kExpected);
}

TEST(InterleaveTest, RestoresMidCycle) {
  for (int parallel : {0, 2}) {
    Dataset d = range(4).skip(1).interleave(counted, 2, 2, parallel);
    for (int cut = 0; cut <= 9; ++cut) {
      Iterator it = d.iterator();
      testing::drain(it, cut);
      std::vector<uint8_t> state = it.save();
      Iterator resumed = d.iterator();
      resumed.restore(state);
      EXPECT_EQ(testing::drain(resumed),
                std::vector<int64_t>(kExpected.begin() + cut, kExpected.end()))
          << "cut " << cut << " parallel " << parallel;
    }
  }
}

TEST(InterleaveTest, FunctionErrorNamesTheStage) {
  Iterator it = range(3).interleave([](const Element&) -> Dataset {
    throw std::runtime_error("cannot open");
  }).iterator();
  KILN_EXPECT_ERROR(it.next(), DataError, "[interleave] the function failed: cannot open");
}

}  // namespace
}  // namespace kiln::data
