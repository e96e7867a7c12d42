// TraceRecorder and TraceSession: events on the right threads, valid Chrome trace JSON, one
// session at a time, and the kernel table's shares and rates by hand.
#include "kiln/core/trace_recorder.h"

#include <gtest/gtest.h>

#include <thread>

#include "kiln/core/error.h"

namespace kiln {
namespace {

TEST(TraceRecorderTest, ScopesRecordOnlyWhileASessionIsOn) {
  { TraceScope before("kernel", "ignored"); }
  std::vector<TraceEvent> events;
  {
    TraceSession session;
    { TraceScope a("compile", "cse", "train_step"); }
    std::thread([] { TraceScope b("input", "map"); }).join();
    events = session.recorder().events();
  }
  { TraceScope after("kernel", "ignored"); }
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].name, "cse");
  EXPECT_EQ(events[0].category, "compile");
  EXPECT_EQ(events[0].detail, "train_step");
  EXPECT_EQ(events[0].tid, 0);
  EXPECT_EQ(events[1].name, "map");
  EXPECT_EQ(events[1].tid, 1);  // another thread, another track
  for (const TraceEvent& e : events) EXPECT_GE(e.duration_ns, 0);
}

TEST(TraceRecorderTest, OneSessionAtATime) {
  TraceSession first;
  EXPECT_THROW(TraceSession second, ValueError);
}

TEST(TraceRecorderTest, ChromeTraceHasTheRequiredFieldsAndEscapesNames) {
  TraceRecorder r;
  const int64_t t = TraceRecorder::now_ns();
  r.add("fusion(loop, \"3\" ops)", "kernel", t + 1000, t + 3500, "train_step step 4", 64, -1);
  const std::string json = r.chrome_trace_json();
  EXPECT_NE(json.find(R"j("name": "fusion(loop, \"3\" ops)", "cat": "kernel", "ph": "X")j"), std::string::npos) << json;
  EXPECT_NE(json.find(R"j("dur": 2.500, "pid": 1, "tid": 0, "args": {"detail": "train_step step 4", "bytes": 64})j"),
            std::string::npos)
      << json;
  EXPECT_EQ(json.rfind("{\"displayTimeUnit\"", 0), 0u);
}

// Two kernels: "a" 3 ms over 2 calls moving 6e6 bytes (2 GB/s), "b" 1 ms with 5e6 flops
// (5 GFLOP/s): shares 75% and 25%.
TEST(TraceRecorderTest, KernelSummaryRanksByTimeWithShareAndRate) {
  TraceRecorder r;
  r.add("a", "kernel", 0, 1'000'000, "", 3'000'000);
  r.add("a", "kernel", 0, 2'000'000, "", 3'000'000);
  r.add("b", "kernel", 0, 1'000'000, "", 10, 5'000'000);
  r.add("input_wait", "input", 0, 9'000'000);  // not a kernel
  const std::string s = r.kernel_summary();
  EXPECT_NE(s.find("kernels: 2 distinct, 4 ms in all"), std::string::npos) << s;
  const size_t a = s.find("  75.0%     2.0 GB/s  a\n"), b = s.find("  25.0%  5.0 GFLOP/s  b\n");
  EXPECT_NE(a, std::string::npos) << s;
  EXPECT_NE(b, std::string::npos) << s;
  EXPECT_LT(a, b);
}

}  // namespace
}  // namespace kiln
