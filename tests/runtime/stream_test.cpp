// Streams run work in order (on their own thread when asynchronous); events report completion
// and errors; an error is never lost.
#include "kiln/runtime/stream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
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

struct TestMarker final : DeviceMarker {
  explicit TestMarker(std::atomic<int>& live) : live_(live) { ++live_; }
  ~TestMarker() override { --live_; }
  std::atomic<int>& live_;
};

// Device work is issued (a marker other device work can wait on) before it is done; the host
// waits for issue only, and the marker is let go once the work is done.
TEST(EventTest, WaitIssuedReturnsTheMarkerUntilTheWorkIsDone) {
  std::atomic<int> live{0};
  Event e = Event::pending();
  std::atomic<bool> returned{false};
  std::shared_ptr<const DeviceMarker> seen;
  std::thread waiter([&] {
    seen = e.wait_issued();
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(returned);  // neither issued nor done yet
  auto marker = std::make_shared<const TestMarker>(live);
  e.issue(marker);
  waiter.join();
  EXPECT_EQ(seen, marker);
  EXPECT_FALSE(e.ready());  // issued is not done
  EXPECT_EQ(e.wait_issued(), marker);
  seen.reset();
  marker.reset();
  EXPECT_EQ(live, 1);  // the event holds it while the work may run
  e.complete();
  EXPECT_EQ(live, 0);  // done: the marker is dropped
  EXPECT_EQ(e.wait_issued(), nullptr);
  e.issue(std::make_shared<const TestMarker>(live));  // too late: ignored
  EXPECT_EQ(live, 0);
  EXPECT_EQ(Event().wait_issued(), nullptr);
}

TEST(EventTest, WaitIssuedRethrowsAFailure) {
  std::atomic<int> live{0};
  Event e = Event::pending();
  e.issue(std::make_shared<const TestMarker>(live));
  e.fail(std::make_exception_ptr(std::runtime_error("copy failed")));
  EXPECT_EQ(live, 0);
  EXPECT_THROW(e.wait_issued(), std::runtime_error);
}

}  // namespace
}  // namespace kiln::runtime
