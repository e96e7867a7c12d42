// Streams run work in order (on their own thread when asynchronous); events report completion
// and errors; an error is never lost.
#include "kiln/runtime/stream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace kiln::runtime {
namespace {

TEST(StreamTest, AsynchronousWorkRunsInOrderOffTheCallersThread) {
  Stream s("test", /*asynchronous=*/true);
  std::vector<int> order;
  std::thread::id worker;
  Event gate = Event::pending();
  s.wait_for(gate);  // holds the queue until the caller has queued everything
  for (int i = 0; i < 100; ++i) s.enqueue([&order, &worker, i] {
    order.push_back(i);
    worker = std::this_thread::get_id();
  });
  Event last = s.enqueue([] {});
  EXPECT_FALSE(last.ready());
  gate.complete();
  s.synchronize();
  EXPECT_TRUE(last.ready());
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  EXPECT_NE(worker, std::this_thread::get_id());
}

TEST(StreamTest, InlineStreamRunsBeforeEnqueueReturns) {
  Stream s("test", /*asynchronous=*/false);
  int ran = 0;
  Event e = s.enqueue([&] { ++ran; });
  EXPECT_EQ(ran, 1);
  EXPECT_TRUE(e.ready());
}

TEST(StreamTest, AnErrorFailsItsEventAndSynchronizeButNotLaterWork) {
  for (bool asynchronous : {false, true}) {
    Stream s("test", asynchronous);
    Event bad = s.enqueue([] { throw std::runtime_error("copy failed"); });
    std::atomic<bool> later{false};
    s.enqueue([&] { later = true; });
    EXPECT_THROW(s.synchronize(), std::runtime_error);
    EXPECT_TRUE(later);
    EXPECT_THROW(bad.wait(), std::runtime_error);
    EXPECT_NO_THROW(s.synchronize());  // reported once
  }
}

TEST(StreamTest, WorkWaitingForAFailedEventFails) {
  Stream s("test", /*asynchronous=*/true);
  Event upstream = Event::pending();
  s.wait_for(upstream);
  upstream.fail(std::make_exception_ptr(std::runtime_error("upstream")));
  EXPECT_THROW(s.synchronize(), std::runtime_error);
}

TEST(StreamTest, DestructorFinishesQueuedWork) {
  std::atomic<int> ran{0};
  {
    Stream s("test", /*asynchronous=*/true);
    for (int i = 0; i < 10; ++i) s.enqueue([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++ran;
    });
  }
  EXPECT_EQ(ran, 10);
}

TEST(EventTest, DefaultEventIsComplete) {
  Event e;
  EXPECT_TRUE(e.ready());
  EXPECT_NO_THROW(e.wait());
}

}  // namespace
}  // namespace kiln::runtime
